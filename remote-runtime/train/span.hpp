// A view of contiguous elements: the part of C++20's std::span ferry-train uses, in C++17, so the
// trainer builds with the compilers GPU boxes have. Converts from anything with data() and
// size() (vectors, arrays, std::span in C++20 callers), so callers need not name it; one type for
// every TU, whatever its -std (see expected.hpp).
#pragma once

#include <cstddef>
#include <iterator>
#include <type_traits>

namespace ferry {

template <class T>
class Span {
 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using iterator = T*;

  constexpr Span() noexcept = default;
  constexpr Span(T* data, std::size_t size) noexcept : data_(data), size_(size) {}
  template <std::size_t N>
  constexpr Span(T (&array)[N]) noexcept : data_(array), size_(N) {}
  template <class C, class = std::enable_if_t<!std::is_same_v<std::decay_t<C>, Span> &&
                                              std::is_convertible_v<decltype(std::data(std::declval<C&>())), T*> &&
                                              std::is_convertible_v<decltype(std::size(std::declval<C&>())), std::size_t>>>
  constexpr Span(C&& container) noexcept : data_(std::data(container)), size_(std::size(container)) {}

  constexpr T* data() const noexcept { return data_; }
  constexpr std::size_t size() const noexcept { return size_; }
  constexpr std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  constexpr bool empty() const noexcept { return size_ == 0; }
  constexpr T* begin() const noexcept { return data_; }
  constexpr T* end() const noexcept { return data_ + size_; }
  constexpr T& operator[](std::size_t i) const noexcept { return data_[i]; }
  constexpr T& front() const noexcept { return data_[0]; }
  constexpr T& back() const noexcept { return data_[size_ - 1]; }

  // As std::span's: the caller keeps offset (and offset + count) within size().
  constexpr Span subspan(std::size_t offset, std::size_t count = static_cast<std::size_t>(-1)) const noexcept {
    return {data_ + offset, count == static_cast<std::size_t>(-1) ? size_ - offset : count};
  }
  constexpr Span first(std::size_t count) const noexcept { return {data_, count}; }
  constexpr Span last(std::size_t count) const noexcept { return {data_ + size_ - count, count}; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

template <class T>
Span<const std::byte> as_bytes(Span<T> s) noexcept {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size_bytes()};
}

}  // namespace ferry
