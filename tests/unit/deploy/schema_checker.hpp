// A tiny JSON Schema (draft 2020-12) checker for exactly the keywords ferry.schema.json uses, so
// the schema-agreement test needs no Python. A keyword it does not know is an error, never
// silently ignored: the schema cannot grow a rule this checker would skip.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry::test {

class SchemaChecker {
 public:
  explicit SchemaChecker(nlohmann::json schema) : root_(std::move(schema)) {}
  // Every violation as "pointer: keyword"; empty when the instance is valid. Throws
  // std::runtime_error on keywords or $refs the checker does not support.
  std::vector<std::string> validate(const nlohmann::json& instance) const;

 private:
  void check(const nlohmann::json& schema, const nlohmann::json& instance, const std::string& pointer,
             std::vector<std::string>& errors) const;
  const nlohmann::json& resolve(const std::string& ref) const;
  nlohmann::json root_;
};

}  // namespace ferry::test
