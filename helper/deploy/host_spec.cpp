// Host grammar of ferry.json: see host_spec.hpp.
#include "helper/deploy/host_spec.hpp"

#include "helper/deploy/config_patterns.hpp"

#include <charconv>
#include <regex>

namespace ferry::deploy {

std::expected<HostSpec, std::string> parse_host(std::string_view text) {
  // Compiled only for a host the quick accept leaves to it.
  auto regex_match = [&] {
    static const std::regex pattern(kHostPattern, std::regex::ECMAScript);
    return std::regex_match(text.begin(), text.end(), pattern);
  };
  if (text.size() > 255 || (!quick_accept(text, kHostPattern) && !regex_match()))
    return std::unexpected(
        "expected \"local\", an ssh config alias, or [user@]host[:port] with a port from 1 to 65535");
  HostSpec spec;
  std::string_view rest = text;
  if (auto at = rest.find('@'); at != std::string_view::npos) {
    spec.user = std::string(rest.substr(0, at));
    rest.remove_prefix(at + 1);
  }
  std::string_view port;
  if (rest.starts_with('[')) {
    auto close = rest.find(']');
    spec.host = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
    if (rest.starts_with(':')) port = rest.substr(1);
  } else if (auto colon = rest.find(':'); colon != std::string_view::npos) {
    spec.host = std::string(rest.substr(0, colon));
    port = rest.substr(colon + 1);
  } else {
    spec.host = std::string(rest);
  }
  if (!port.empty()) {
    int n = 0;
    std::from_chars(port.data(), port.data() + port.size(), n);  // the regex guarantees 1..65535
    spec.port = n;
  }
  return spec;
}

}  // namespace ferry::deploy
