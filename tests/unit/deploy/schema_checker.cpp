// The test-only JSON Schema subset checker: see schema_checker.hpp.
#include "tests/unit/deploy/schema_checker.hpp"

#include <cmath>
#include <regex>
#include <set>
#include <stdexcept>

namespace ferry::test {
namespace {

using json = nlohmann::json;

bool has_type(const json& instance, const std::string& type) {
  if (type == "object") return instance.is_object();
  if (type == "array") return instance.is_array();
  if (type == "string") return instance.is_string();
  if (type == "boolean") return instance.is_boolean();
  if (type == "null") return instance.is_null();
  if (type == "number") return instance.is_number();
  if (type == "integer") {
    if (instance.is_number_integer()) return true;
    if (!instance.is_number_float()) return false;
    double d = instance.get<double>();
    return std::isfinite(d) && std::trunc(d) == d;  // 2020-12: 1.0 is an integer
  }
  throw std::runtime_error("unsupported type " + type);
}

std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++n;
  return n;
}

std::string escape(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  return out;
}

const std::set<std::string> kAnnotations = {"$schema", "$id", "$defs", "title", "description", "default", "examples"};

}  // namespace

std::vector<std::string> SchemaChecker::validate(const json& instance) const {
  std::vector<std::string> errors;
  check(root_, instance, "", errors);
  return errors;
}

const json& SchemaChecker::resolve(const std::string& ref) const {
  if (!ref.starts_with("#/")) throw std::runtime_error("unsupported $ref " + ref);
  return root_.at(json::json_pointer(ref.substr(1)));
}

void SchemaChecker::check(const json& schema, const json& instance, const std::string& ptr,
                          std::vector<std::string>& errors) const {
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) errors.push_back(ptr + ": false");
    return;
  }
  auto fail = [&](const std::string& keyword) { errors.push_back(ptr + ": " + keyword); };
  for (const auto& [kw, value] : schema.items()) {
    if (kAnnotations.contains(kw)) continue;
    if (kw == "$ref") {
      check(resolve(value.get<std::string>()), instance, ptr, errors);
    } else if (kw == "if") {
      // "if" only picks "then" or "else"; its own failures are not errors.
      std::vector<std::string> scratch;
      check(value, instance, ptr, scratch);
      const char* branch = scratch.empty() ? "then" : "else";
      if (auto it = schema.find(branch); it != schema.end()) check(*it, instance, ptr, errors);
    } else if (kw == "then" || kw == "else") {
      continue;  // applied by "if"
    } else if (kw == "oneOf") {
      int passing = 0;
      for (const auto& sub : value) {
        std::vector<std::string> scratch;
        check(sub, instance, ptr, scratch);
        passing += scratch.empty() ? 1 : 0;
      }
      if (passing != 1) fail("oneOf");
    } else if (kw == "type") {
      bool ok = false;
      if (value.is_string())
        ok = has_type(instance, value.get<std::string>());
      else
        for (const auto& t : value) ok = ok || has_type(instance, t.get<std::string>());
      if (!ok) fail("type");
    } else if (kw == "enum") {
      bool found = false;
      for (const auto& v : value) found = found || v == instance;
      if (!found) fail("enum");
    } else if (kw == "const") {
      if (value != instance) fail("const");
    } else if (kw == "minLength" || kw == "maxLength" || kw == "pattern") {
      if (!instance.is_string()) continue;
      const auto& s = instance.get_ref<const std::string&>();
      if (kw == "minLength" && code_points(s) < value.get<std::size_t>()) fail(kw);
      if (kw == "maxLength" && code_points(s) > value.get<std::size_t>()) fail(kw);
      if (kw == "pattern" && !std::regex_search(s, std::regex(value.get<std::string>(), std::regex::ECMAScript)))
        fail(kw);
    } else if (kw == "minimum" || kw == "maximum") {
      if (!instance.is_number()) continue;
      double d = instance.get<double>();
      if (kw == "minimum" && d < value.get<double>()) fail(kw);
      if (kw == "maximum" && d > value.get<double>()) fail(kw);
    } else if (kw == "minItems" || kw == "maxItems" || kw == "items") {
      if (!instance.is_array()) continue;
      if (kw == "minItems" && instance.size() < value.get<std::size_t>()) fail(kw);
      if (kw == "maxItems" && instance.size() > value.get<std::size_t>()) fail(kw);
      if (kw == "items")
        for (std::size_t i = 0; i < instance.size(); ++i) check(value, instance[i], ptr + "/" + std::to_string(i), errors);
    } else if (kw == "required" || kw == "properties" || kw == "additionalProperties" || kw == "propertyNames") {
      if (!instance.is_object()) continue;
      if (kw == "required") {
        for (const auto& k : value)
          if (!instance.contains(k.get<std::string>())) fail("required " + k.get<std::string>());
      } else if (kw == "properties") {
        for (const auto& [k, sub] : value.items())
          if (auto it = instance.find(k); it != instance.end()) check(sub, *it, ptr + "/" + escape(k), errors);
      } else if (kw == "additionalProperties") {
        const json* props = schema.contains("properties") ? &schema["properties"] : nullptr;
        for (const auto& [k, v] : instance.items())
          if (!props || !props->contains(k)) check(value, v, ptr + "/" + escape(k), errors);
      } else {
        for (const auto& [k, v] : instance.items()) check(value, json(k), ptr + "/" + escape(k), errors);
      }
    } else {
      throw std::runtime_error("schema keyword '" + kw + "' is not supported by the test checker");
    }
  }
}

}  // namespace ferry::test
