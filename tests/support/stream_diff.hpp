// Says how a received byte stream differs from the one sent (header-only): short or long by how
// much, the first differing offset, and whether the bytes after it are the sent ones shifted
// (a dropped or repeated run) — so a failing transfer test names the failure, not just "differs".
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace ferry::test {

// "" when equal. Otherwise e.g. "got 8388608 of 8388608 bytes; first difference at 1048576;
// 32768 sent bytes missing there (the rest matches shifted)". The shift search assumes payloads
// without long repeats (random bytes).
inline std::string describe_stream_difference(std::string_view sent, std::string_view got) {
  if (sent == got) return "";
  std::string out = "got " + std::to_string(got.size()) + " of " + std::to_string(sent.size()) + " bytes";
  auto mismatch = std::mismatch(sent.begin(), sent.end(), got.begin(), got.end());
  auto at = static_cast<std::size_t>(mismatch.first - sent.begin());
  if (at == got.size()) return out + "; a prefix of what was sent (short by " + std::to_string(sent.size() - at) + ")";
  if (at == sent.size()) return out + "; what was sent plus " + std::to_string(got.size() - at) + " extra bytes";
  out += "; first difference at " + std::to_string(at);
  constexpr std::size_t kProbe = 64;
  auto probe = got.substr(at, std::min(kProbe, got.size() - at));
  // The received bytes at `at` found later in `sent`: a run went missing.
  auto later = sent.find(probe, at + 1);
  if (later != std::string_view::npos)
    return out + "; " + std::to_string(later - at) + " sent bytes missing there (" +
           (got.substr(at) == sent.substr(later) ? "the rest matches shifted)" : "then more differences)");
  // Found earlier: a run came twice.
  auto earlier = sent.rfind(probe, at);
  if (earlier != std::string_view::npos)
    return out + "; " + std::to_string(at - earlier) + " bytes repeated there (from offset " + std::to_string(earlier) + ")";
  return out + "; the bytes there are not from the sent stream";
}

}  // namespace ferry::test
