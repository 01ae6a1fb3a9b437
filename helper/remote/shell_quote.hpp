// Quoting a word for the box's POSIX shell: every command ferry builds for an exec channel
// (agent install, the env probe, the trainer's probe and build) quotes its arguments with this.
#pragma once

#include <string>
#include <string_view>

namespace ferry::remote {

// 'text', with each ' written as '\'' so nothing inside is expanded.
inline std::string shell_quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

}  // namespace ferry::remote
