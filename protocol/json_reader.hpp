// Pointer-aware reading of untrusted JSON into typed structs. Every error names the JSON
// pointer of the bad field and what was expected, so -32602 replies can say exactly which
// part of the params was wrong ("/path: expected a string").
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry::protocol {

struct DecodeError {
  std::string pointer;  // "" for the whole value
  std::string message;  // what was expected there
  std::string to_string() const { return (pointer.empty() ? std::string("/") : pointer) + ": " + message; }
};

// Appends one reference token to a JSON pointer, escaping '~' and '/' (RFC 6901).
std::string pointer_append(std::string_view base, std::string_view token);

// Reads one value. Each overload returns the error, or nullopt on success.
std::optional<DecodeError> read_value(const nlohmann::json& j, std::string& out, const std::string& ptr);
std::optional<DecodeError> read_value(const nlohmann::json& j, bool& out, const std::string& ptr);
std::optional<DecodeError> read_value(const nlohmann::json& j, std::int64_t& out, const std::string& ptr);
std::optional<DecodeError> read_value(const nlohmann::json& j, int& out, const std::string& ptr);
std::optional<DecodeError> read_value(const nlohmann::json& j, double& out, const std::string& ptr);
std::optional<DecodeError> read_value(const nlohmann::json& j, nlohmann::json& out, const std::string& ptr);

// Nested structs: any type with `std::optional<DecodeError> from_json(const json&, T&, const
// std::string& pointer)` found by ADL (the convention in messages.hpp).
template <class T>
  requires requires(const nlohmann::json& j, T& t, const std::string& p) {
    { from_json(j, t, p) } -> std::same_as<std::optional<DecodeError>>;
  }
std::optional<DecodeError> read_value(const nlohmann::json& j, T& out, const std::string& ptr) {
  return from_json(j, out, ptr);
}

template <class T>
std::optional<DecodeError> read_value(const nlohmann::json& j, std::vector<T>& out, const std::string& ptr) {
  if (!j.is_array()) return DecodeError{ptr, "expected an array"};
  out.clear();
  out.resize(j.size());
  for (std::size_t i = 0; i < j.size(); ++i)
    if (auto e = read_value(j[i], out[i], pointer_append(ptr, std::to_string(i)))) return e;
  return std::nullopt;
}

template <class T>
std::optional<DecodeError> read_value(const nlohmann::json& j, std::map<std::string, T>& out, const std::string& ptr) {
  if (!j.is_object()) return DecodeError{ptr, "expected an object"};
  out.clear();
  for (auto it = j.begin(); it != j.end(); ++it)
    if (auto e = read_value(it.value(), out[it.key()], pointer_append(ptr, it.key()))) return e;
  return std::nullopt;
}

// Reads the fields of one object; the first error sticks and later reads are skipped.
// Unknown fields are ignored, as LSP peers expect (newer clients send more).
class ObjectReader {
 public:
  // A null value reads as an empty object, so methods whose params are all optional accept
  // absent params.
  ObjectReader(const nlohmann::json& j, std::string pointer = "");

  template <class T>
  ObjectReader& required(std::string_view key, T& out) {
    if (error_) return *this;
    auto it = find(key);
    if (!it) {
      error_ = DecodeError{pointer_append(pointer_, key), "is required"};
      return *this;
    }
    error_ = read_value(*it, out, pointer_append(pointer_, key));
    return *this;
  }

  // Absent or null leaves `out` as nullopt.
  template <class T>
  ObjectReader& optional(std::string_view key, std::optional<T>& out) {
    if (error_) return *this;
    auto it = find(key);
    if (!it || it->is_null()) {
      out.reset();
      return *this;
    }
    T v{};
    error_ = read_value(*it, v, pointer_append(pointer_, key));
    if (!error_) out = std::move(v);
    return *this;
  }

  // Absent or null keeps the default already in `out`.
  template <class T>
  ObjectReader& optional(std::string_view key, T& out) {
    if (error_) return *this;
    auto it = find(key);
    if (!it || it->is_null()) return *this;
    error_ = read_value(*it, out, pointer_append(pointer_, key));
    return *this;
  }

  // Adds a constraint check on an already-read field.
  ObjectReader& check(bool ok, std::string_view key, std::string message) {
    if (!error_ && !ok) error_ = DecodeError{pointer_append(pointer_, key), std::move(message)};
    return *this;
  }

  const std::optional<DecodeError>& error() const { return error_; }
  const std::string& pointer() const { return pointer_; }

 private:
  const nlohmann::json* find(std::string_view key) const;
  const nlohmann::json& j_;
  std::string pointer_;
  std::optional<DecodeError> error_;
};

}  // namespace ferry::protocol
