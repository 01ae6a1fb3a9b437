// A value or the reason there is none: the subset of C++23's std::expected ferry-train uses, in
// C++17, so the trainer builds with the compilers GPU boxes have (g++ 9, clang 10). One type for
// every TU, whatever its -std: the helper (C++23) includes these headers and links the trainer's
// support libraries, so nothing here may depend on the language version.
#pragma once

#include <exception>
#include <type_traits>
#include <utility>
#include <variant>

namespace ferry {

// The error side, as std::unexpected: `return Unexpected("why");` out of an Expected function.
template <class E>
class Unexpected {
 public:
  template <class G = E, class = std::enable_if_t<std::is_constructible_v<E, G&&>>>
  constexpr explicit Unexpected(G&& error) : error_(std::forward<G>(error)) {}

  constexpr const E& error() const& noexcept { return error_; }
  constexpr E& error() & noexcept { return error_; }
  constexpr E&& error() && noexcept { return std::move(error_); }

 private:
  E error_;
};

template <class E>
Unexpected(E) -> Unexpected<E>;

// value() on an Expected holding an error (as std::bad_expected_access, without the error).
class BadExpectedAccess : public std::exception {
 public:
  const char* what() const noexcept override { return "ferry::Expected holds an error, not a value"; }
};

template <class T, class E>
class Expected;

namespace expected_detail {
template <class U>
struct IsUnexpected : std::false_type {};
template <class G>
struct IsUnexpected<Unexpected<G>> : std::true_type {};
}  // namespace expected_detail

template <class T, class E>
class Expected {
 public:
  using value_type = T;
  using error_type = E;

  Expected() : state_(std::in_place_index<0>) {}
  template <class U = T, class = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                                 !std::is_same_v<std::decay_t<U>, Expected> &&
                                                 !std::is_same_v<std::decay_t<U>, std::in_place_t> &&
                                                 !expected_detail::IsUnexpected<std::decay_t<U>>::value>>
  Expected(U&& value) : state_(std::in_place_index<0>, std::forward<U>(value)) {}
  template <class G, class = std::enable_if_t<std::is_constructible_v<E, const G&>>>
  Expected(const Unexpected<G>& u) : state_(std::in_place_index<1>, u.error()) {}
  template <class G, class = std::enable_if_t<std::is_constructible_v<E, G&&>>>
  Expected(Unexpected<G>&& u) : state_(std::in_place_index<1>, std::move(u).error()) {}
  template <class... Args>
  explicit Expected(std::in_place_t, Args&&... args) : state_(std::in_place_index<0>, std::forward<Args>(args)...) {}

  bool has_value() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & {
    checked();
    return **this;
  }
  const T& value() const& {
    checked();
    return **this;
  }
  T&& value() && {
    checked();
    return std::move(**this);
  }

  T& operator*() & noexcept { return *std::get_if<0>(&state_); }
  const T& operator*() const& noexcept { return *std::get_if<0>(&state_); }
  T&& operator*() && noexcept { return std::move(*std::get_if<0>(&state_)); }
  T* operator->() noexcept { return std::get_if<0>(&state_); }
  const T* operator->() const noexcept { return std::get_if<0>(&state_); }

  E& error() & noexcept { return *std::get_if<1>(&state_); }
  const E& error() const& noexcept { return *std::get_if<1>(&state_); }
  E&& error() && noexcept { return std::move(*std::get_if<1>(&state_)); }

  template <class U>
  T value_or(U&& fallback) const& {
    return has_value() ? **this : static_cast<T>(std::forward<U>(fallback));
  }
  template <class U>
  T value_or(U&& fallback) && {
    return has_value() ? std::move(**this) : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  void checked() const {
    if (!has_value()) throw BadExpectedAccess();
  }

  std::variant<T, E> state_;  // by index: T and E may be the same type
};

// Success without a value: `return {};`.
template <class E>
class Expected<void, E> {
 public:
  using value_type = void;
  using error_type = E;

  Expected() = default;
  template <class G, class = std::enable_if_t<std::is_constructible_v<E, const G&>>>
  Expected(const Unexpected<G>& u) : state_(std::in_place_index<1>, u.error()) {}
  template <class G, class = std::enable_if_t<std::is_constructible_v<E, G&&>>>
  Expected(Unexpected<G>&& u) : state_(std::in_place_index<1>, std::move(u).error()) {}

  bool has_value() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }
  void value() const {
    if (!has_value()) throw BadExpectedAccess();
  }
  void operator*() const noexcept {}

  E& error() & noexcept { return *std::get_if<1>(&state_); }
  const E& error() const& noexcept { return *std::get_if<1>(&state_); }
  E&& error() && noexcept { return std::move(*std::get_if<1>(&state_)); }

 private:
  std::variant<std::monostate, E> state_;
};

}  // namespace ferry
