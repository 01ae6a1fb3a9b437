// The typed binding table: see binding_table.hpp.
#include "protocol/binding_table.hpp"

#include <algorithm>

namespace ferry::protocol {

ResponseError cancelled_error(std::string_view method) {
  return ResponseError{error_code::kRequestCancelled, "request " + std::string(method) + " was cancelled", {}};
}

ResponseError invalid_params_error(std::string_view method, const DecodeError& e) {
  return ResponseError{error_code::kInvalidParams, "invalid params for " + std::string(method) + ": " + e.to_string(),
                       json{{"pointer", e.pointer}}};
}

const MethodEntry* BindingTable::find(std::string_view name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second;
}

std::vector<std::string> BindingTable::method_names() const {
  std::vector<std::string> names;
  for (const auto& [name, _] : entries_) names.push_back(name);
  names.insert(names.end(), reserved_.begin(), reserved_.end());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace ferry::protocol
