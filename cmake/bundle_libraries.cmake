# CPack pre-build script (cmake/packaging.cmake): for the tarball only, copies the shared libraries
# ferry links into lib/ferry/ and points ferry's RUNPATH there ($ORIGIN/../lib/ferry), so the
# unpacked folder runs on a laptop that has none of them, wherever it is put. Not bundled: glibc's
# own libraries (every Linux has them, matched to its loader) and GCC's runtime (libstdc++ and
# libgcc_s: Debian 12's need glibc 2.36, and every distribution with glibc 2.34+ ships GCC 12's
# libstdc++ or newer, which is all ferry asks of it). The .deb gets none of this: there
# dpkg-shlibdeps names the packages instead.
if(NOT CPACK_GENERATOR STREQUAL "TGZ")
  return()
endif()
file(GLOB_RECURSE ferry_exe LIST_DIRECTORIES false "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*/bin/ferry" "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/bin/ferry")
list(GET ferry_exe 0 ferry_exe)
get_filename_component(root "${ferry_exe}" DIRECTORY)
get_filename_component(root "${root}" DIRECTORY)
file(GET_RUNTIME_DEPENDENCIES
  EXECUTABLES "${ferry_exe}"
  RESOLVED_DEPENDENCIES_VAR libs
  UNRESOLVED_DEPENDENCIES_VAR missing
  PRE_EXCLUDE_REGEXES "^ld-linux" "^libc\\.so" "^libm\\.so" "^libpthread\\.so" "^libdl\\.so" "^librt\\.so" "^libresolv\\.so" "^libutil\\.so"
                      "^libstdc\\+\\+\\.so" "^libgcc_s\\.so")
if(missing)
  message(FATAL_ERROR "bundle_libraries: ferry links libraries that cannot be found: ${missing}")
endif()
file(MAKE_DIRECTORY "${root}/lib/ferry")
foreach(lib IN LISTS libs)
  get_filename_component(name "${lib}" NAME)
  # FOLLOW_SYMLINK_CHAIN: the file under the name the loader asks for (its soname).
  file(COPY "${lib}" DESTINATION "${root}/lib/ferry" FOLLOW_SYMLINK_CHAIN)
endforeach()
find_program(PATCHELF patchelf REQUIRED)
execute_process(COMMAND "${PATCHELF}" --set-rpath "$ORIGIN/../lib/ferry" "${ferry_exe}" COMMAND_ERROR_IS_FATAL ANY)
file(GLOB bundled "${root}/lib/ferry/*")
foreach(lib IN LISTS bundled)
  if(NOT IS_SYMLINK "${lib}")
    # The libraries find each other there too (libspdlog -> libfmt ...).
    execute_process(COMMAND "${PATCHELF}" --set-rpath "$ORIGIN" "${lib}" COMMAND_ERROR_IS_FATAL ANY)
  endif()
endforeach()
