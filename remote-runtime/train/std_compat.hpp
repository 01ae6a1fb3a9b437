// C++20 library functions ferry-train uses, written in C++17 so the trainer builds with the
// compilers GPU boxes have (g++ 9, clang 10); plain functions, the same in every TU whatever its
// -std. Expected, Span and parse_double (which needs POSIX's locale_t) have headers of their own.
#pragma once

#include <cstring>
#include <string_view>
#include <type_traits>

namespace ferry {

// s.starts_with(prefix) / s.ends_with(suffix) of C++20's strings.
inline bool starts_with(std::string_view s, std::string_view prefix) noexcept {
  return s.substr(0, prefix.size()) == prefix;
}
inline bool starts_with(std::string_view s, char c) noexcept { return !s.empty() && s.front() == c; }
inline bool ends_with(std::string_view s, std::string_view suffix) noexcept {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
inline bool ends_with(std::string_view s, char c) noexcept { return !s.empty() && s.back() == c; }

// std::bit_cast, less constexpr.
template <class To, class From>
To bit_cast(const From& from) noexcept {
  static_assert(sizeof(To) == sizeof(From) && std::is_trivially_copyable_v<To> && std::is_trivially_copyable_v<From>);
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

}  // namespace ferry
