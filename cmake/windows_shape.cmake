# The Windows shape: ferry.exe (the helper: CLI and `ferry serve`) and its unit tests, cross-built
# with MinGW-w64 (cmake/toolchain-x86_64-w64-mingw32.cmake, scripts/build-windows.sh). The agent and
# ferry-train stay Linux programs on the box. Included by the top-level CMakeLists.txt when the
# target is Windows, which returns after it.
#
# Dependencies: static libraries scripts/windows_deps.sh built from Debian's source packages
# (zstd, libcrypto, libssh2 on OpenSSL, libcurl on Schannel) in FERRY_CROSS_PREFIX, and the
# header-only libraries (Boost.Asio/Test, nlohmann/json, CLI11, spdlog, fmt, xxHash) through a
# folder of links, so nothing else of the build host's /usr/include reaches the MinGW compiler.
# Their targets carry the Linux build's names, so the libraries' own CMakeLists.txt serve both.

set(FERRY_HEADER_ONLY_ROOT /usr/include CACHE PATH "The build host's folder holding the header-only libraries")
set(ferry_links ${CMAKE_BINARY_DIR}/header-only)
file(MAKE_DIRECTORY ${ferry_links})
foreach(name boost nlohmann CLI spdlog fmt xxhash.h)
  if(NOT EXISTS ${FERRY_HEADER_ONLY_ROOT}/${name})
    message(FATAL_ERROR "ferry for Windows: ${FERRY_HEADER_ONLY_ROOT}/${name} is missing (scripts/setup.sh installs "
                        "libboost-dev, nlohmann-json3-dev, libcli11-dev, libspdlog-dev, libfmt-dev, libxxhash-dev)")
  endif()
  file(CREATE_LINK ${FERRY_HEADER_ONLY_ROOT}/${name} ${ferry_links}/${name} SYMBOLIC)
endforeach()
include_directories(SYSTEM ${ferry_links})

# Windows 10 and later; <windows.h> without min/max macros or the rarely used half.
add_compile_definitions(_WIN32_WINNT=0x0A00 WINVER=0x0A00 WIN32_LEAN_AND_MEAN NOMINMAX UNICODE _UNICODE)
# Boost.Process 1.74 (common/process.cpp) uses MSVC's __kernel_entry annotation, unknown to MinGW.
add_compile_definitions(__kernel_entry=)
# Boost 1.74's asio/awaitable.hpp uses std::exchange without including <utility> (MinGW's headers
# do not bring it in on the way, glibc's do).
add_compile_options(-include utility)

find_package(Threads REQUIRED)
foreach(lib nlohmann_json fmt spdlog spdlog_header_only CLI11 xxhash)
  add_library(ferry_win_${lib} INTERFACE)
endforeach()
# Its folder is also what the trainer's source pack copies nlohmann/ from (helper/train).
set_target_properties(ferry_win_nlohmann_json PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${ferry_links})
add_library(nlohmann_json::nlohmann_json ALIAS ferry_win_nlohmann_json)
target_compile_definitions(ferry_win_fmt INTERFACE FMT_HEADER_ONLY=1)
add_library(fmt::fmt ALIAS ferry_win_fmt)
target_link_libraries(ferry_win_spdlog INTERFACE ferry_win_fmt Threads::Threads)
target_compile_definitions(ferry_win_spdlog INTERFACE SPDLOG_FMT_EXTERNAL)
add_library(spdlog::spdlog ALIAS ferry_win_spdlog)
add_library(spdlog::spdlog_header_only ALIAS ferry_win_spdlog)
add_library(CLI11::CLI11 ALIAS ferry_win_CLI11)
add_library(PkgConfig::LIBXXHASH ALIAS ferry_win_xxhash)

# Boost.Test in its header-only form: one object holds the framework and main().
add_library(ferry_win_boost_test OBJECT ${CMAKE_SOURCE_DIR}/tests/support/boost_test_included.cpp)
add_library(Boost::unit_test_framework ALIAS ferry_win_boost_test)

function(ferry_win_static_lib target file)
  if(NOT EXISTS ${FERRY_CROSS_PREFIX}/lib/${file})
    message(FATAL_ERROR "ferry for Windows: ${FERRY_CROSS_PREFIX}/lib/${file} is missing: run scripts/setup.sh "
                        "(scripts/windows_deps.sh builds it from Debian's source package)")
  endif()
  add_library(${target} STATIC IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES IMPORTED_LOCATION ${FERRY_CROSS_PREFIX}/lib/${file}
                                             INTERFACE_INCLUDE_DIRECTORIES ${FERRY_CROSS_PREFIX}/include)
endfunction()
ferry_win_static_lib(zstd::libzstd_static libzstd.a)
add_library(zstd::libzstd_shared ALIAS zstd::libzstd_static)  # static here: one .exe
ferry_win_static_lib(OpenSSL::Crypto libcrypto.a)
set_property(TARGET OpenSSL::Crypto PROPERTY INTERFACE_LINK_LIBRARIES ws2_32 crypt32 bcrypt user32 advapi32)
ferry_win_static_lib(PkgConfig::LIBSSH2 libssh2.a)
set_property(TARGET PkgConfig::LIBSSH2 PROPERTY INTERFACE_LINK_LIBRARIES OpenSSL::Crypto ws2_32)
ferry_win_static_lib(CURL::libcurl libcurl.a)
set_property(TARGET CURL::libcurl PROPERTY INTERFACE_COMPILE_DEFINITIONS CURL_STATICLIB)
set_property(TARGET CURL::libcurl PROPERTY INTERFACE_LINK_LIBRARIES ws2_32 crypt32 secur32 bcrypt advapi32)
ferry_win_static_lib(Boost::filesystem libboost_filesystem.a)
set_property(TARGET Boost::filesystem PROPERTY INTERFACE_COMPILE_DEFINITIONS BOOST_FILESYSTEM_STATIC_LINK BOOST_ALL_NO_LIB)
set_property(TARGET Boost::filesystem PROPERTY INTERFACE_LINK_LIBRARIES advapi32)
include(${CMAKE_SOURCE_DIR}/cmake/helper_deps.cmake)  # deps::*: the targets above, as they are

# What builds for Windows so far (docs/windows.md): `ferry_windows` builds these and the tests in
# tests/windows-tests.txt, each registered with ctest under the label `windows`.
add_custom_target(ferry_windows ALL)
add_subdirectory(common)
add_subdirectory(protocol)
# ferry-train's torch-free pieces the helper shares (ferry_webhook, ferry_train_support).
set(FERRY_WITH_TORCH OFF)
add_subdirectory(remote-runtime/train)
add_subdirectory(helper)
add_dependencies(ferry_windows ferry ferry_protocol ferry_delta ferry_sync_wire ferry_posix)

if(FERRY_TESTS)
  enable_testing()
  file(STRINGS ${CMAKE_SOURCE_DIR}/tests/windows-tests.txt ferry_windows_tests REGEX "^[a-z]")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/windows-tests.txt)
  set(FERRY_TEST_ENV "BOOST_TEST_COLOR_OUTPUT=no")
  # The Linux build's ferry_add_test, for the tests listed: the same sources, Boost.Test compiled
  # in, run under Wine. Tests not (yet) listed are left out of this build.
  function(ferry_add_test name)
    cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
    if(NOT name IN_LIST ferry_windows_tests)
      # Defined but never built or run, so the CMakeLists.txt lines that set its properties hold.
      add_executable(${name} EXCLUDE_FROM_ALL ${T_SOURCES})
      return()
    endif()
    add_executable(${name} ${T_SOURCES})
    target_link_libraries(${name} PRIVATE ${T_LIBS} Boost::unit_test_framework)
    add_test(NAME ${name} COMMAND ${name} --log_level=message)
    set_tests_properties(${name} PROPERTIES LABELS windows ENVIRONMENT "${FERRY_TEST_ENV}")
    add_dependencies(ferry_windows ${name})
  endfunction()
  function(ferry_add_missing_tool_test)
  endfunction()
  # test_windows_cli's stand-in for the Windows OpenSSH agent (its pipe, one key), beside ferry.exe.
  add_executable(windows_ssh_agent ${CMAKE_SOURCE_DIR}/tests/support/windows_ssh_agent.cpp)
  target_link_libraries(windows_ssh_agent PRIVATE OpenSSL::Crypto)
  set_target_properties(windows_ssh_agent PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
  add_dependencies(ferry_windows windows_ssh_agent)
  add_custom_target(ferry_sanitized_tests)
  foreach(dir unit/common unit/protocol unit/delta unit/cloud unit/deploy unit/ssh unit/sync)
    add_subdirectory(tests/${dir})
  endforeach()
endif()

# The Windows zip (scripts/package.sh: `cpack -G ZIP` here): ferry.exe with the Linux agents it
# uploads, in the installed layout of cmake/install.cmake (ferry.exe finds them in ..\libexec\ferry),
# unpacked anywhere. The agents are the Linux build's.
# cpack installs what ferry_windows built: not `all`, which holds libraries that do not build for
# Windows (ferry_nvml).
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)
set(FERRY_AGENTS_DIR ${CMAKE_SOURCE_DIR}/build/bin CACHE PATH "The Linux build's bin/ holding ferry-agent and ferry-agent-aarch64")
install(TARGETS ferry RUNTIME DESTINATION bin)
install(PROGRAMS ${FERRY_AGENTS_DIR}/ferry-agent ${FERRY_AGENTS_DIR}/ferry-agent-aarch64 DESTINATION libexec/ferry)
install(FILES protocol/spec/ferry.schema.json protocol/spec/train-config.schema.json DESTINATION share/ferry/schemas)
install(FILES README.md packaging/copyright DESTINATION share/doc/ferry)
install(DIRECTORY docs/ DESTINATION share/doc/ferry/docs)
set(CPACK_PACKAGE_NAME ferry)
set(CPACK_PACKAGE_VENDOR "the ferry authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_FILE_NAME ferry-${PROJECT_VERSION}-windows-x86_64)
set(CPACK_GENERATOR ZIP)
set(CPACK_STRIP_FILES bin/ferry.exe)
include(CPack)
