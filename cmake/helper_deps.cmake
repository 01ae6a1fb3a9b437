# The libraries under ferry's SSH link and files: libssh2 (with OpenSSL's libcrypto and zlib) and
# Boost.Filesystem, as deps:: targets that every ferry library links. A target with the property
# FERRY_STATIC_DEPS (the `ferry` binary, helper/cli) gets their static archives from the -dev
# packages: each shared library costs the loader a mapping, symbol lookups and relocations at
# every start, and a riding command is mostly its start (docs/install.md). Everything else (tests,
# benches, ferry-train, which links libcurl and with it the shared libcrypto) gets the shared ones.
# Windows' one .exe is static anyway (cmake/windows_shape.cmake).
set(ferry_static_deps_found OFF)
if(NOT WIN32)
  find_library(FERRY_LIBSSH2_A NAMES libssh2.a)
  find_library(FERRY_LIBCRYPTO_A NAMES libcrypto.a)
  find_library(FERRY_LIBZ_A NAMES libz.a)
  find_library(FERRY_BOOST_FILESYSTEM_A NAMES libboost_filesystem.a)
  if(FERRY_LIBSSH2_A AND FERRY_LIBCRYPTO_A AND FERRY_LIBZ_A AND FERRY_BOOST_FILESYSTEM_A)
    set(ferry_static_deps_found ON)
  else()
    message(STATUS "ferry: a static libssh2, libcrypto, libz or libboost_filesystem is missing: `ferry` links the shared ones")
  endif()
endif()

# deps::NAME links `static` (archives, in link order) for a FERRY_STATIC_DEPS target, else `shared`.
function(ferry_dep name shared)
  set(static ${ARGN})
  add_library(deps::${name} INTERFACE IMPORTED GLOBAL)
  if(NOT ferry_static_deps_found)
    set_property(TARGET deps::${name} PROPERTY INTERFACE_LINK_LIBRARIES ${shared})
    return()
  endif()
  set(on "$<BOOL:$<TARGET_PROPERTY:FERRY_STATIC_DEPS>>")
  set(links "$<$<NOT:${on}>:${shared}>")
  foreach(a IN LISTS static)
    list(APPEND links "$<${on}:${a}>")
  endforeach()
  set_property(TARGET deps::${name} PROPERTY INTERFACE_LINK_LIBRARIES ${links})
endfunction()

ferry_dep(crypto OpenSSL::Crypto ${FERRY_LIBCRYPTO_A} ${CMAKE_DL_LIBS} Threads::Threads)
ferry_dep(libssh2 PkgConfig::LIBSSH2 ${FERRY_LIBSSH2_A} ${FERRY_LIBCRYPTO_A} ${FERRY_LIBZ_A} ${CMAKE_DL_LIBS} Threads::Threads)
ferry_dep(boost_filesystem Boost::filesystem ${FERRY_BOOST_FILESYSTEM_A})
