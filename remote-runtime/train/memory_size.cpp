// Parsing and printing memory sizes; the accepted grammar matches the schema's pattern for
// auto_batch.cpu_memory_limit.
#include "remote-runtime/train/memory_size.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <utility>

namespace ferry::train {

Expected<std::int64_t, std::string> parse_memory_size(std::string_view text) {
  const std::string bad = "expected a size such as \"4GiB\", \"512MiB\" or \"2GB\", got \"" + std::string(text) + "\"";
  std::size_t i = 0;
  double whole = 0;
  std::size_t digits = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    whole = whole * 10 + (text[i] - '0');
    ++i;
    ++digits;
  }
  if (digits == 0 || digits > 18) return Unexpected(bad);
  if (i < text.size() && text[i] == '.') {
    ++i;
    double scale = 0.1;
    std::size_t frac = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      whole += (text[i] - '0') * scale;
      scale /= 10;
      ++i;
      ++frac;
    }
    if (frac == 0) return Unexpected(bad);
  }
  while (i < text.size() && text[i] == ' ') ++i;
  const std::string_view unit = text.substr(i);
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"", 1.0},      {"B", 1.0},           {"KB", 1e3},           {"MB", 1e6},
      {"GB", 1e9},    {"TB", 1e12},         {"KiB", 1024.0},       {"MiB", 1048576.0},
      {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) {
      const double bytes = std::floor(whole * factor);
      if (bytes < 1) return Unexpected("a memory size must be at least 1 byte, got \"" + std::string(text) + "\"");
      if (bytes >= 9.2e18) return Unexpected("memory size too large: \"" + std::string(text) + "\"");
      return static_cast<std::int64_t>(bytes);
    }
  }
  return Unexpected(bad);
}

std::string format_bytes(double bytes) {
  static constexpr const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.2f %s", bytes, kNames[unit]);
  return buf;
}

}  // namespace ferry::train
