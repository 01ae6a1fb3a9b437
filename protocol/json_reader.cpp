// Pointer-aware JSON reading: see json_reader.hpp.
#include "protocol/json_reader.hpp"

#include <cmath>

namespace ferry::protocol {

using json = nlohmann::json;

std::string pointer_append(std::string_view base, std::string_view token) {
  std::string out(base);
  out += '/';
  for (char c : token) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

std::optional<DecodeError> read_value(const json& j, std::string& out, const std::string& ptr) {
  if (!j.is_string()) return DecodeError{ptr, "expected a string"};
  out = j.get_ref<const std::string&>();
  return std::nullopt;
}

std::optional<DecodeError> read_value(const json& j, bool& out, const std::string& ptr) {
  if (!j.is_boolean()) return DecodeError{ptr, "expected a boolean"};
  out = j.get<bool>();
  return std::nullopt;
}

std::optional<DecodeError> read_value(const json& j, std::int64_t& out, const std::string& ptr) {
  if (j.is_number_integer() && !j.is_number_unsigned()) {
    out = j.get<std::int64_t>();
    return std::nullopt;
  }
  if (j.is_number_unsigned()) {
    auto u = j.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return DecodeError{ptr, "integer out of range"};
    out = static_cast<std::int64_t>(u);
    return std::nullopt;
  }
  if (j.is_number_float()) {
    double d = j.get<double>();
    // JSON has one number type: 5.0 is an integer to most clients.
    if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 9.0e15) {
      out = static_cast<std::int64_t>(d);
      return std::nullopt;
    }
  }
  return DecodeError{ptr, "expected an integer"};
}

std::optional<DecodeError> read_value(const json& j, int& out, const std::string& ptr) {
  std::int64_t v = 0;
  if (auto e = read_value(j, v, ptr)) return e;
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
    return DecodeError{ptr, "integer out of range"};
  out = static_cast<int>(v);
  return std::nullopt;
}

std::optional<DecodeError> read_value(const json& j, double& out, const std::string& ptr) {
  if (!j.is_number()) return DecodeError{ptr, "expected a number"};
  out = j.get<double>();
  return std::nullopt;
}

std::optional<DecodeError> read_value(const json& j, json& out, const std::string&) {
  out = j;
  return std::nullopt;
}

ObjectReader::ObjectReader(const json& j, std::string pointer) : j_(j), pointer_(std::move(pointer)) {
  if (!j_.is_object() && !j_.is_null()) error_ = DecodeError{pointer_, "expected an object"};
}

const json* ObjectReader::find(std::string_view key) const {
  if (!j_.is_object()) return nullptr;
  auto it = j_.find(key);
  return it == j_.end() ? nullptr : &*it;
}

}  // namespace ferry::protocol
