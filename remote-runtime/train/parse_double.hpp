// std::from_chars for double, written in C++17 for the compilers GPU boxes have (libstdc++ has it
// from GCC 11 only). Apart from std_compat.hpp because it needs POSIX's locale_t: the files the
// Windows helper shares with ferry-train include std_compat.hpp, and never parse CSV.
#pragma once

#include <locale.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "remote-runtime/train/std_compat.hpp"

namespace ferry {

namespace compat_detail {

inline bool equals_nocase(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(s[i])) != lower[i]) return false;
  return true;
}

// inf, infinity, nan or nan(chars), any case.
inline bool is_special(std::string_view s) {
  if (equals_nocase(s, "inf") || equals_nocase(s, "infinity") || equals_nocase(s, "nan")) return true;
  if (s.size() < 5 || !equals_nocase(s.substr(0, 4), "nan(") || s.back() != ')') return false;
  for (char c : s.substr(4, s.size() - 5))
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// digits [. digits] [e [+-] digits], at least one mantissa digit; `nonzero`: one of them is not 0.
inline bool is_decimal(std::string_view s, bool& nonzero) {
  std::size_t i = 0, digits = 0;
  nonzero = false;
  auto digit_run = [&](bool mantissa) {
    std::size_t n = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i, ++n)
      if (mantissa && s[i] != '0') nonzero = true;
    return n;
  };
  digits += digit_run(true);
  if (i < s.size() && s[i] == '.') {
    ++i;
    digits += digit_run(true);
  }
  if (digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digit_run(false) == 0) return false;
  }
  return i == s.size();
}

}  // namespace compat_detail

// What std::from_chars(first, last, double&) gives for the whole of `text` (chars_format::general:
// an optional '-', no '+', no hex, no spaces; a value too large or too small for a double is no
// value), which libstdc++ has from GCC 11 only: the syntax checked here, then strtod in the "C"
// locale, which rounds the same (correctly).
inline std::optional<double> parse_double(std::string_view text) {
  namespace d = compat_detail;
  const std::string_view body = starts_with(text, '-') ? text.substr(1) : text;
  bool nonzero = false;
  const bool special = d::is_special(body);
  if (!special && !d::is_decimal(body, nonzero)) return std::nullopt;
  static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(0));
  const locale_t previous = c_locale ? uselocale(c_locale) : static_cast<locale_t>(0);
  const std::string copy(text);  // strtod needs the NUL
  const double v = std::strtod(copy.c_str(), nullptr);
  if (previous) uselocale(previous);
  if (!special && (std::isinf(v) || (v == 0 && nonzero))) return std::nullopt;  // overflow, underflow
  return v;
}

}  // namespace ferry
