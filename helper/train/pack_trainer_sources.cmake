# Packs the trainer's sources for the box (cmake -P, at build time): the box CMakeLists and
# build.sh at the top, remote-runtime/train's sources, protocol/json_parse_core.hpp, nlohmann's
# headers under third_party/. All of it is C++17 (the box's compiler may be g++ 9).
# Fixed mtimes and a sorted list keep the archive (and so its hash, the box's cache key) the same
# for the same contents (the box keys its cache on the .tar.gz's sha256). In: SOURCE_DIR, JSON_INCLUDE (holding nlohmann/), OUT (the .tar.gz).
set(stage "${OUT}.stage")
file(REMOVE_RECURSE "${stage}")
file(MAKE_DIRECTORY "${stage}/remote-runtime/train" "${stage}/third_party" "${stage}/protocol")
set(train "${SOURCE_DIR}/remote-runtime/train")
file(COPY "${train}/box/CMakeLists.txt" "${train}/box/build.sh" DESTINATION "${stage}")
file(GLOB sources "${train}/*.cpp" "${train}/*.hpp" "${train}/CMakeLists.txt")
file(COPY ${sources} DESTINATION "${stage}/remote-runtime/train")
# The one header of protocol/ the trainer includes: header-only, the depth-limited JSON parse
# (C++17; json_parse.hpp, its std::expected face, stays with the helper).
file(COPY "${SOURCE_DIR}/protocol/json_parse_core.hpp" DESTINATION "${stage}/protocol")
# The folder itself, not a link to it (the Windows build reaches nlohmann/ through a link), which
# file(COPY) would copy as a link. A pack without it cannot build on the box: refused here.
file(REAL_PATH "${JSON_INCLUDE}/nlohmann" json_dir)
if(NOT EXISTS "${json_dir}/json.hpp")
  message(FATAL_ERROR "pack_trainer_sources: no nlohmann/json.hpp under '${JSON_INCLUDE}'")
endif()
file(COPY "${json_dir}/" DESTINATION "${stage}/third_party/nlohmann" FILES_MATCHING PATTERN "*.hpp")
file(GLOB_RECURSE files RELATIVE "${stage}" "${stage}/*")
list(SORT files)
# gzip -n: no name or time in the gzip header either.
execute_process(COMMAND "${CMAKE_COMMAND}" -E tar cf "${OUT}.tar" --format=gnutar "--mtime=2000-01-01 00:00:00" -- ${files}
                WORKING_DIRECTORY "${stage}" RESULT_VARIABLE rc)
if(rc EQUAL 0)
  execute_process(COMMAND gzip -n -9 -c "${OUT}.tar" OUTPUT_FILE "${OUT}.tmp" RESULT_VARIABLE rc)
endif()
file(REMOVE "${OUT}.tar")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "packing the trainer's sources failed")
endif()
file(RENAME "${OUT}.tmp" "${OUT}")
file(REMOVE_RECURSE "${stage}")
