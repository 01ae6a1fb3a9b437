// ferry's own checks of a ferry.json beyond its JSON Schema: where the mappings' folders lead,
// protect rules that leave a push nothing to write, and whether the host names something ssh
// knows. They read the raw document, so they still run when parse_project stopped earlier.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "helper/diagnostics/diagnostic.hpp"
#include "helper/diagnostics/json_locator.hpp"
#include "helper/ssh/ssh_config.hpp"

namespace ferry::diagnostics {

struct RuleFinding {
  std::string pointer;
  Mark mark = Mark::value;
  Severity severity = Severity::warning;
  std::string message;
  std::string code;
};

struct ProjectRuleContext {
  std::filesystem::path root;  // the folder holding ferry.json; empty when unknown
  // Whose ~/.ssh/config is read, and what "~" means in sshConfig.
  ssh::LocalContext ssh_local;
  bool check_ssh_host = true;  // false: no file is read at all
};

// "local" paths outside the project (error: ferry refuses them; "ferry.mappingOutsideProject"),
// or inside it but written with ".." or absolute (error, with the path to write instead:
// "ferry.mappingPath").
std::vector<RuleFinding> check_mapping_paths(const nlohmann::json& doc, const std::filesystem::path& root);

// A protect list that covers every path of a mapping ("*", "**", "/*", "/**", "**/*") or names
// its root ("/", "."): a push would write nothing (warning, "ferry.protectShadowsMapping").
// Rules followed by a negation ("!src/") carve exceptions on purpose and are left alone.
std::vector<RuleFinding> check_protect_rules(const nlohmann::json& doc);

// A bare host name that no Host line of the ssh config names (warning, "ferry.unknownHost"), or
// an ssh config that cannot be read or parsed (warning, "ferry.sshConfig"). Names with a user,
// a port, a dot or an IP address are host names, not aliases, and are not checked.
std::vector<RuleFinding> check_ssh_host(const nlohmann::json& doc, const ProjectRuleContext& context);

std::vector<RuleFinding> check_project_rules(const nlohmann::json& doc, const ProjectRuleContext& context);

}  // namespace ferry::diagnostics
