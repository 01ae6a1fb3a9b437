// The IDE wire's shapes (protocol/spec/ide-wire.schema.json) as the tests hold the server to them:
// every result, notification and server request a test reads from a real `ferry serve` whose
// method the schema names is checked against it, so a field the C++ adds or renames without the
// schema (and so without the extension's generated types) fails the test that saw it.
// Header-only; link ferry_protocol.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "protocol/json_schema.hpp"

namespace ferry::test {

class WireSchema {
 public:
  using json = nlohmann::json;

  // Sections of the schema file: what is checked where.
  static constexpr const char* kSections[] = {"requests", "notifications", "serverRequests", "commands"};

  // The schema of this source tree, compiled once; a schema that does not compile throws.
  static const WireSchema& instance() {
    static const WireSchema schema(default_path());
    return schema;
  }

  // The checkout this test binary was built from, found from the binary's own place and never from
  // __FILE__: the compiler cache shares objects between checkouts (CCACHE_BASEDIR), so a path
  // compiled in may name another checkout, or be relative. Walks up from the binary: a folder that
  // holds the schema, or a build folder whose CMakeCache.txt names its source folder.
  static std::filesystem::path default_path() {
    namespace fs = std::filesystem;
    const fs::path schema = "protocol/spec/ide-wire.schema.json";
    const std::string home_key = "CMAKE_HOME_DIRECTORY:INTERNAL=";
    const fs::path exe = fs::read_symlink("/proc/self/exe");
    for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
      if (fs::exists(dir / schema)) return dir / schema;
      std::ifstream cache(dir / "CMakeCache.txt");
      for (std::string line; std::getline(cache, line);)
        if (line.starts_with(home_key)) return fs::path(line.substr(home_key.size())) / schema;
      if (dir == dir.root_path()) break;
    }
    throw std::runtime_error("no " + schema.string() + " above " + exe.string());
  }

  explicit WireSchema(const std::filesystem::path& file) {
    std::ifstream in(file);
    if (!in) throw std::runtime_error("cannot read " + file.string());
    std::stringstream text;
    text << in.rdbuf();
    const json doc = json::parse(text.str());
    for (const char* section : kSections)
      for (const auto& [name, parts] : doc.at(section).items())
        for (const auto& [part, schema] : parts.items()) {
          json whole = schema;
          whole["$defs"] = doc.at("$defs");
          auto compiled = protocol::JsonSchema::compile(std::move(whole));
          if (!compiled) throw std::runtime_error(file.string() + ": " + section + " " + name + " " + part + ": " + compiled.error());
          schemas_.emplace(key(section, name, part), std::move(*compiled));
        }
  }

  bool knows(const std::string& section, const std::string& name, const std::string& part) const {
    return schemas_.contains(key(section, name, part));
  }

  // "" when `value` fits (or the schema does not name it); else one line per violation.
  std::string check(const std::string& section, const std::string& name, const std::string& part, const json& value) const {
    auto it = schemas_.find(key(section, name, part));
    if (it == schemas_.end()) return "";
    std::string out;
    for (const auto& v : it->second.validate(value))
      out += section + " " + name + " " + part + ": " + (v.pointer.empty() ? "/" : v.pointer) + ": " + v.message + "\n";
    return out;
  }

  // A message read from the server, given the method of the client request it answers (for a
  // response; "" when unknown) and the command for workspace/executeCommand. Throws on a misfit.
  void check_message(const json& m, const std::string& request_method = "", const std::string& command = "") const {
    std::string problems;
    if (m.contains("method") && m["method"].is_string()) {
      const std::string method = m["method"].get<std::string>();
      const json params = m.value("params", json::object());
      problems = m.contains("id") ? check("serverRequests", method, "params", params) : check("notifications", method, "params", params);
    } else if (m.contains("result")) {
      problems = request_method == "workspace/executeCommand" ? check("commands", command, "result", m["result"])
                                                              : check("requests", request_method, "result", m["result"]);
    }
    if (!problems.empty())
      throw std::runtime_error("the server's message does not fit protocol/spec/ide-wire.schema.json:\n" + problems + m.dump());
  }

 private:
  static std::string key(const std::string& section, const std::string& name, const std::string& part) {
    return section + "\n" + name + "\n" + part;
  }
  std::map<std::string, protocol::JsonSchema> schemas_;
};

}  // namespace ferry::test
