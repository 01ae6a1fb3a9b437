// "Did you mean ...?" for misspelled names: the closest candidate by edit distance, if it is close
// enough to be a typo rather than a different word.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ferry::protocol {

// Levenshtein distance, ASCII letters compared case-insensitively ("Host" vs "host" is 0).
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word` when at most `max_distance` edits away (ties: the first), and
// not `word` itself. Default: 2 edits, which catches typos but not unrelated short names.
std::optional<std::string> closest_spelling(std::string_view word, std::span<const std::string> candidates,
                                            std::size_t max_distance = 2);

}  // namespace ferry::protocol
