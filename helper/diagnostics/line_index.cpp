// Byte offset -> LSP position: see line_index.hpp.
#include "helper/diagnostics/line_index.hpp"

#include <algorithm>

namespace ferry::diagnostics {

std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  auto lead = static_cast<unsigned char>(text[i]);
  std::size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 1;
  if (i + n > text.size()) return 1;
  for (std::size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return 1;
  return n;
}

LineIndex::LineIndex(std::string_view text) : text_(text) {
  line_starts_.push_back(0);
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' || (text[i] == '\r' && (i + 1 == text.size() || text[i + 1] != '\n')))
      line_starts_.push_back(i + 1);
  }
}

TextPosition LineIndex::position(std::size_t offset) const {
  offset = std::min(offset, text_.size());
  auto line = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - line_starts_.begin() - 1;
  std::size_t units = 0;
  for (std::size_t i = line_starts_[line]; i < offset;) {
    std::size_t n = utf8_sequence_length(text_, i);
    if (i + n > offset) break;
    units += n == 4 ? 2 : 1;  // 4-byte sequences are outside the BMP: a surrogate pair
    i += n;
  }
  return {static_cast<int>(line), static_cast<int>(units)};
}

}  // namespace ferry::diagnostics
