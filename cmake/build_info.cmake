# ferry_build_info: the version and git commit of this build (common/build_info.hpp), regenerated
# on every build by cmake/write_build_info.cmake (the file changes only when the commit does).
set(ferry_build_info_cpp ${CMAKE_BINARY_DIR}/generated/ferry/build_info.cpp)
add_custom_target(ferry_build_info_source
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_SOURCE_DIR} -DOUT=${ferry_build_info_cpp} -DVERSION=${PROJECT_VERSION}
          -P ${CMAKE_SOURCE_DIR}/cmake/write_build_info.cmake
  BYPRODUCTS ${ferry_build_info_cpp}
  COMMENT "" VERBATIM)
add_library(ferry_build_info STATIC ${ferry_build_info_cpp})
add_dependencies(ferry_build_info ferry_build_info_source)
