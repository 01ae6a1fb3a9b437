# cmake -DINPUT=FILE -DOUTPUT=FILE.cpp -DNAME=fn -P embed_text.cmake
# Writes OUTPUT defining `std::string_view ferry::protocol::NAME()`: INPUT's bytes, as an array
# (no raw-string delimiter to collide with, no literal length limit), so binaries carry the file.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REPEAT "0x[0-9a-f][0-9a-f]," 16 sixteen)
string(REGEX REPLACE "(${sixteen})" "\\1\n" bytes "${bytes}")
get_filename_component(input_name "${INPUT}" NAME)
file(WRITE "${OUTPUT}.tmp" "// Generated from ${input_name} by protocol/embed_text.cmake; do not edit.
#include <string_view>

namespace ferry::protocol {
namespace {
const unsigned char kBytes[] = {
${bytes}0x00};
}  // namespace

std::string_view ${NAME}() { return {reinterpret_cast<const char*>(kBytes), ${size}}; }

}  // namespace ferry::protocol
")
# Only touch OUTPUT when it changed, so an unrelated reconfigure recompiles nothing.
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
