// Typo suggestions: see spelling.hpp.
#include "protocol/spelling.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace ferry::protocol {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> closest_spelling(std::string_view word, std::span<const std::string> candidates,
                                            std::size_t max_distance) {
  // Long inputs are not typos of short names; skip the quadratic work for them.
  if (word.size() > 256) return std::nullopt;
  const std::string* best = nullptr;
  std::size_t best_distance = max_distance + 1;
  for (const auto& c : candidates) {
    if (c == word || c.size() > 256) continue;
    std::size_t d = edit_distance(word, c);
    // A one- or two-letter word is "close" to every other short word; demand fewer edits than letters.
    if (d < best_distance && d < std::max(word.size(), c.size())) {
      best = &c;
      best_distance = d;
    }
  }
  if (!best) return std::nullopt;
  return *best;
}

}  // namespace ferry::protocol
