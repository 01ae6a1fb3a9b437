// ferry.json's own rules: see project_rules.hpp.
#include "helper/diagnostics/project_rules.hpp"

#include "common/path_within.hpp"
#include "helper/deploy/host_spec.hpp"
#include "helper/sync/ignore_rules.hpp"
#include "protocol/spelling.hpp"

namespace ferry::diagnostics {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

std::string json_quoted(std::string_view s) { return json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace); }

std::optional<RuleFinding> check_local_path(const std::string& local, const fs::path& root, const std::string& pointer) {
  fs::path p(local);
  if (p.is_absolute()) {
    fs::path rel = root.empty() ? fs::path() : ferry::posix::relative_to(p.lexically_normal(), root.lexically_normal());
    if (rel.empty() || *rel.begin() == "..")
      return RuleFinding{pointer, Mark::value, Severity::error,
                         json_quoted(local) + " is outside the project" + (root.empty() ? "" : " (" + root.string() + ")") +
                             ": a mapping's local folder must be inside it",
                         "ferry.mappingOutsideProject"};
    return RuleFinding{pointer, Mark::value, Severity::error,
                       "write the folder relative to the project root: " + json_quoted(rel.string()), "ferry.mappingPath"};
  }
  bool dotdot = false;
  for (const auto& part : p) dotdot = dotdot || part == "..";
  if (!dotdot) return std::nullopt;
  fs::path norm = p.lexically_normal();
  if (!norm.empty() && *norm.begin() == "..") {
    std::string where = root.empty() ? "" : ": it is " + (root / p).lexically_normal().string() + ", outside " + root.string();
    return RuleFinding{pointer, Mark::value, Severity::error, json_quoted(local) + " leaves the project" + where,
                       "ferry.mappingOutsideProject"};
  }
  std::string plain = norm.empty() ? "." : norm.string();
  return RuleFinding{pointer, Mark::value, Severity::error, "write it without \"..\": " + json_quoted(plain), "ferry.mappingPath"};
}

// Does this protect list cover every path a mapping can hold? Probed with names of every shape
// the patterns could single out: hidden, with an extension, nested, a directory.
bool protects_everything(const std::vector<std::string>& patterns) {
  auto matcher = sync::IgnoreMatcher::from_patterns(patterns);
  static const std::pair<const char*, bool> kProbes[] = {
      {"ferry-probe", false}, {".ferry-probe", false}, {"ferry-probe.py", false}, {"ferry-probe", true},
      {"src/ferry-probe.py", false}, {"a/b/c/.ferry-probe", false}, {"a/b/c", true}};
  for (const auto& [path, is_dir] : kProbes)
    if (!matcher.is_ignored(path, is_dir)) return false;
  return true;
}

// "/", ".", "./", "/." ...: the mapping root itself (which .gitignore syntax never matches).
bool names_root(std::string_view pattern) {
  return !pattern.empty() && pattern.find_first_not_of("/.") == std::string_view::npos &&
         pattern.find("..") == std::string_view::npos;
}

}  // namespace

std::vector<RuleFinding> check_mapping_paths(const json& doc, const fs::path& root) {
  std::vector<RuleFinding> out;
  auto mappings = doc.is_object() ? doc.find("mappings") : doc.end();
  if (mappings == doc.end() || !mappings->is_array()) return out;
  for (std::size_t i = 0; i < mappings->size(); ++i) {
    const json& m = (*mappings)[i];
    if (!m.is_object() || !m.contains("local") || !m["local"].is_string()) continue;
    std::string pointer = "/mappings/" + std::to_string(i) + "/local";
    if (auto f = check_local_path(m["local"].get<std::string>(), root, pointer)) out.push_back(std::move(*f));
  }
  return out;
}

std::vector<RuleFinding> check_protect_rules(const json& doc) {
  auto protect = doc.is_object() ? doc.find("protect") : doc.end();
  if (protect == doc.end() || !protect->is_array()) return {};
  std::vector<std::string> patterns;
  std::vector<std::size_t> where;  // index in the JSON array of each pattern
  std::size_t free_from = 0;       // patterns from here on have no exception ("!...") after them
  for (std::size_t i = 0; i < protect->size(); ++i) {
    const json& p = (*protect)[i];
    if (!p.is_string() || p.get_ref<const std::string&>().empty()) continue;
    patterns.push_back(p.get<std::string>());
    where.push_back(i);
    if (patterns.back().starts_with("!")) free_from = patterns.size();
  }
  auto finding = [&](std::size_t k, std::string message) {
    return std::vector<RuleFinding>{{"/protect/" + std::to_string(where[k]), Mark::value, Severity::warning,
                                     json_quoted(patterns[k]) + std::move(message), "ferry.protectShadowsMapping"}};
  };
  for (std::size_t k = free_from; k < patterns.size(); ++k)
    if (names_root(patterns[k]))
      return finding(k, " means the whole mapping, which would leave a push nothing to write (and in .gitignore syntax "
                        "it matches nothing); protect remote-only folders such as \"/data/\"");
  if (free_from == patterns.size() || !protects_everything(patterns)) return {};
  // Past the last exception, more patterns only protect more: bisect for the first that covers all.
  std::size_t lo = free_from, hi = patterns.size() - 1;
  while (lo < hi) {
    std::size_t mid = lo + (hi - lo) / 2;
    if (protects_everything({patterns.begin(), patterns.begin() + static_cast<std::ptrdiff_t>(mid) + 1})) hi = mid;
    else lo = mid + 1;
  }
  return finding(lo, " protects every path of the mapping: a push would write nothing; protect remote-only folders such "
                     "as \"/data/\"");
}

std::vector<RuleFinding> check_ssh_host(const json& doc, const ProjectRuleContext& context) {
  if (!context.check_ssh_host || !doc.is_object() || !doc.contains("host") || !doc["host"].is_string()) return {};
  auto spec = deploy::parse_host(doc["host"].get<std::string>());
  if (!spec || spec->is_local() || spec->user || spec->port) return {};
  const std::string& name = spec->host;
  // A dot or colon makes it a DNS name or an address; ssh needs no Host line for those.
  if (name == "localhost" || name.find_first_of(".:") != std::string::npos) return {};
  std::optional<std::string> config;
  std::string shown = "~/.ssh/config", config_pointer = "/host";
  if (auto c = doc.find("sshConfig"); c != doc.end() && c->is_string() && !c->get_ref<const std::string&>().empty()) {
    shown = c->get<std::string>();
    config_pointer = "/sshConfig";
    // Relative to the project, where the IDE's ferry runs (the CLI takes it from its cwd).
    bool relative = !shown.starts_with("/") && !shown.starts_with("~");
    config = relative && !context.root.empty() ? (context.root / shown).string() : shown;
  }
  auto lookup = ssh::lookup_host_alias(name, config, context.ssh_local);
  if (!lookup)
    return {{config_pointer, Mark::value, Severity::warning,
             "cannot check the host against the ssh config: " + lookup.error().to_string(), "ferry.sshConfig"}};
  if (lookup->named) return {};
  std::string message = json_quoted(name) + " is not a Host in " + shown;
  if (auto near = protocol::closest_spelling(name, lookup->names)) message += " (did you mean \"" + *near + "\"?)";
  message += "; ssh would look it up as a host name";
  return {{"/host", Mark::value, Severity::warning, std::move(message), "ferry.unknownHost"}};
}

std::vector<RuleFinding> check_project_rules(const json& doc, const ProjectRuleContext& context) {
  std::vector<RuleFinding> out = check_mapping_paths(doc, context.root);
  for (auto& f : check_protect_rules(doc)) out.push_back(std::move(f));
  for (auto& f : check_ssh_host(doc, context)) out.push_back(std::move(f));
  return out;
}

}  // namespace ferry::diagnostics
