# ferry_add_test(NAME SOURCES a.cpp LIBS x LABELS l): one Boost.Test executable registered with ctest.
# Tests labelled "protocol" also join ferry_sanitized_tests, rebuilt under ASan+UBSan by scripts/test.sh.
function(ferry_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_compile_definitions(${name} PRIVATE BOOST_TEST_DYN_LINK)
  target_link_libraries(${name} PRIVATE ${T_LIBS} Boost::unit_test_framework)
  add_test(NAME ${name} COMMAND ${name} --log_level=message)
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "${FERRY_TEST_ENV}")
  if(T_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
    if("protocol" IN_LIST T_LABELS)
      add_dependencies(ferry_sanitized_tests ${name})
    endif()
  endif()
endfunction()


# ferry_add_no_daemon_run(NAME): NAME (a ferry_add_test) again as NAME_no_daemon with
# FERRY_NO_DAEMON=1, so the CLI's tests hold both with the daemon a command leaves (the default)
# and without one (docs/sync.md).
function(ferry_add_no_daemon_run name)
  add_test(NAME ${name}_no_daemon COMMAND ${name} --log_level=message)
  get_test_property(${name} LABELS labels)
  set_tests_properties(${name}_no_daemon PROPERTIES ENVIRONMENT "${FERRY_TEST_ENV};FERRY_NO_DAEMON=1" LABELS "${labels};no-daemon")
endfunction()

# ferry_add_missing_tool_test(NAME WHY [LABELS l]): where a tool a test needs was not found when the
# build was configured, the test is registered all the same and fails saying what is missing and
# what to do, so that a run without the tool cannot pass by leaving the test out.
function(ferry_add_missing_tool_test name why)
  cmake_parse_arguments(T "" "" "LABELS" ${ARGN})
  message(WARNING "${name}: ${why}; registered as a test that fails until then")
  add_test(NAME ${name} COMMAND /bin/sh -c "printf 'not run: %s\\n' \"$1\" >&2; exit 1" sh "${why}")
  if(T_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}")
  endif()
endfunction()
