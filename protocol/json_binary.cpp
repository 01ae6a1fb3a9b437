// binary_as_text / text_as_binary (json_binary.hpp).
#include "protocol/json_binary.hpp"

#include "protocol/base64.hpp"

namespace ferry::protocol {

using nlohmann::json;

namespace {
constexpr const char* kKey = "$base64";
}  // namespace

json binary_as_text(const json& value) {
  if (value.is_binary()) {
    const auto& bytes = value.get_binary();
    return json{{kKey, base64_encode(std::vector<std::uint8_t>(bytes.begin(), bytes.end()))}};
  }
  if (!value.is_structured()) return value;
  json out = value.is_array() ? json::array() : json::object();
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (value.is_array()) out.push_back(binary_as_text(*it));
    else out[it.key()] = binary_as_text(*it);
  }
  return out;
}

json text_as_binary(const json& value) {
  if (value.is_object() && value.size() == 1 && value.contains(kKey) && value[kKey].is_string()) {
    if (auto bytes = base64_decode(value[kKey].get<std::string>())) return json::binary(std::move(*bytes));
    return value;
  }
  if (!value.is_structured()) return value;
  json out = value.is_array() ? json::array() : json::object();
  for (auto it = value.begin(); it != value.end(); ++it) {
    if (value.is_array()) out.push_back(text_as_binary(*it));
    else out[it.key()] = text_as_binary(*it);
  }
  return out;
}

}  // namespace ferry::protocol
