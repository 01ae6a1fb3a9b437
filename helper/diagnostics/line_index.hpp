// Byte offsets in a text to LSP positions (line, UTF-16 character), for diagnostics.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "helper/diagnostics/diagnostic.hpp"

namespace ferry::diagnostics {

// Lines end at "\n", "\r\n" or a lone "\r", as LSP counts them. Characters are UTF-16 code units
// of the UTF-8 text; a byte that is not valid UTF-8 counts as one unit (it shows as U+FFFD).
// Holds a view: `text` must outlive the index.
class LineIndex {
 public:
  explicit LineIndex(std::string_view text);

  // `offset` is clamped to the text's size; an offset inside a multi-byte character is placed
  // before that character.
  TextPosition position(std::size_t offset) const;
  TextRange range(std::size_t begin, std::size_t end) const { return {position(begin), position(end)}; }

 private:
  std::string_view text_;
  std::vector<std::size_t> line_starts_;
};

// Bytes of the UTF-8 sequence starting at text[i] (1 for an invalid or truncated one).
std::size_t utf8_sequence_length(std::string_view text, std::size_t i);

}  // namespace ferry::diagnostics
