// ferry.json: reading, validation with JSON-pointer errors, and the IDE's view of it.
// Every rule here has a structural twin in protocol/spec/ferry.schema.json; the agreement test in
// tests/unit/deploy checks both reject the same bad configs.
#include "helper/deploy/project_config.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <system_error>

#include "helper/deploy/config_patterns.hpp"
#include "helper/deploy/host_spec.hpp"
#include "protocol/json_parse.hpp"
#include "protocol/json_reader.hpp"
#include "protocol/json_schema.hpp"
#include "protocol/spelling.hpp"

namespace ferry::deploy {
namespace {

// The patterns (shared verbatim with the schema) are in config_patterns.hpp.

using json = nlohmann::json;
namespace fs = std::filesystem;

bool matches(const std::string& s, const char* pattern) {
  // libstdc++'s std::regex recurses per character: a 300 KB path in an untrusted ferry.json
  // overflowed the stack of the CLI and of ferry serve. No name or path is that long.
  if (s.size() > protocol::kMaxPatternInput) return false;
  if (quick_accept(s, pattern)) return true;
  // Compiled once per pattern and shared (matching a const regex is thread-safe); not a
  // thread_local, whose destructor MinGW runs after freeing its storage. Never destroyed.
  static std::mutex mutex;
  static auto* cache = new std::map<const char*, std::regex>;
  const std::regex* re;
  {
    std::lock_guard lock(mutex);
    auto it = cache->find(pattern);
    if (it == cache->end()) it = cache->emplace(pattern, std::regex(pattern, std::regex::ECMAScript)).first;
    re = &it->second;
  }
  return std::regex_match(s, *re);
}


// "./a//b/" -> "a/b", "" -> ".": paths as the mapping rules compare them, lexically.
std::string clean_path(const std::string& p) {
  std::string s = fs::path(p).lexically_normal().generic_string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s.empty() ? std::string(".") : s;
}

// `a` and `b` (both absolute, or both "~/...") name the same directory or one holds the other.
bool nested_or_same(const std::string& a, const std::string& b) {
  const std::string x = clean_path(a), y = clean_path(b);
  auto under = [](const std::string& in, const std::string& dir) { return in.starts_with(dir + "/"); };
  return x == y || under(x, y) || under(y, x);
}

// Blanks at a path's ends are refused, not trimmed: the path would name another directory than the
// one the user sees ("~/p " makes a directory whose name ends in a space).
std::string outer_whitespace(const std::string& path) {
  return protocol::quoted(path) + " starts or ends with whitespace, which would become part of a directory's name; remove it";
}

// Walks one document, remembering where it is so every error names its JSON pointer.
class Validator {
 public:
  std::optional<ConfigError> error;
  std::string project_name;  // for suggestions: "name", else the folder's

  bool fail(const std::string& pointer, std::string message) {
    if (!error) error = ConfigError{"", pointer, std::move(message)};
    return false;
  }

  // Unknown keys are errors: a typo like "mapings" must not silently fall back to a default.
  bool only_keys(const json& obj, const std::string& pointer, std::initializer_list<std::string_view> known) {
    for (const auto& [key, value] : obj.items()) {
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      std::string msg = "unknown key \"" + key + "\"";
      std::vector<std::string> names;
      for (auto k : known)
        if (!k.starts_with('$')) names.emplace_back(k);
      if (auto best = protocol::closest_spelling(key, names)) msg += " (did you mean \"" + *best + "\"?)";
      else {
        msg += "; expected one of:";
        for (auto k : known) msg += " " + std::string(k);
      }
      return fail(protocol::pointer_append(pointer, key), msg);
    }
    return true;
  }

  bool object(const json& j, const std::string& pointer) {
    return j.is_object() || fail(pointer, "expected an object");
  }

  bool string(const json& j, const std::string& pointer, std::string& out, bool non_empty = true) {
    if (!j.is_string() || (non_empty && j.get_ref<const std::string&>().empty()))
      return fail(pointer, non_empty ? "expected a non-empty string" : "expected a string");
    out = j.get<std::string>();
    return true;
  }

  bool boolean(const json& j, const std::string& pointer, bool& out) {
    if (!j.is_boolean()) return fail(pointer, "expected true or false");
    out = j.get<bool>();
    return true;
  }

  // JSON Schema's "integer" also admits 8.0, so this does too.
  bool integer(const json& j, const std::string& pointer, int& out, long long lo, long long hi,
               std::string_view what) {
    std::string expect = "expected " + std::string(what) + " from " + std::to_string(lo) + " to " + std::to_string(hi);
    long long v = 0;
    if (j.is_number_integer()) {
      v = j.get<long long>();
      if (j.is_number_unsigned() && j.get<unsigned long long>() > static_cast<unsigned long long>(hi))
        return fail(pointer, expect);
    } else if (j.is_number_float()) {
      double d = j.get<double>();
      if (!std::isfinite(d) || std::trunc(d) != d || d < static_cast<double>(lo) || d > static_cast<double>(hi))
        return fail(pointer, expect);
      v = static_cast<long long>(d);
    } else {
      return fail(pointer, expect);
    }
    if (v < lo || v > hi) return fail(pointer, expect);
    out = static_cast<int>(v);
    return true;
  }

  bool patterns(const json& j, const std::string& pointer, std::vector<std::string>& out) {
    if (!j.is_array()) return fail(pointer, "expected an array of gitignore-style patterns");
    for (std::size_t i = 0; i < j.size(); ++i) {
      std::string pat;
      if (!string(j[i], pointer + "/" + std::to_string(i), pat)) return false;
      out.push_back(std::move(pat));
    }
    return true;
  }

  bool port(const json& j, const std::string& pointer, int& out) {
    return integer(j, pointer, out, 1, 65535, "a port number");
  }

  bool one_of(const json& j, const std::string& pointer, std::string& out, std::initializer_list<std::string_view> allowed) {
    std::string expect = "expected one of";
    for (auto a : allowed) expect += " \"" + std::string(a) + "\"";
    if (!j.is_string()) return fail(pointer, expect);
    const auto& s = j.get_ref<const std::string&>();
    if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) return fail(pointer, expect);
    out = s;
    return true;
  }

  bool mapping(const json& j, const std::string& p, Mapping& m) {
    if (!object(j, p) || !only_keys(j, p, {"local", "remote"})) return false;
    if (auto it = j.find("local"); it != j.end()) {
      if (!string(*it, p + "/local", m.local)) return false;
      if (protocol::has_outer_whitespace(m.local)) return fail(p + "/local", outer_whitespace(m.local));
      if (!matches(m.local, kLocalPathPattern))
        return fail(p + "/local", "expected a path relative to the project root, without '..'");
    }
    auto it = j.find("remote");
    if (it == j.end()) return fail(p + "/remote", "expected a non-empty string (required)");
    if (!string(*it, p + "/remote", m.remote)) return false;
    if (protocol::has_outer_whitespace(m.remote)) return fail(p + "/remote", outer_whitespace(m.remote));
    if (!matches(m.remote, kRemotePathPattern))
      return fail(p + "/remote", "expected an absolute path or one starting with \"~/\", without '..'");
    if (auto refused = remote_root_refusal(m.remote, project_name)) return fail(p + "/remote", *refused);
    return true;
  }

  // Every file belongs to one mapping (the deepest holding it: a mapping inside another's folder
  // takes that folder from it), and every remote folder to one: the same local folder twice
  // would push one file to two places, and a remote inside another mapping's remote would be
  // listed by that mapping's pushes (and offered for deletion by --delete).
  bool mapping_apart(const std::vector<Mapping>& earlier, const Mapping& m, const std::string& p) {
    for (std::size_t k = 0; k < earlier.size(); ++k) {
      const Mapping& e = earlier[k];
      const std::string other = "/mappings/" + std::to_string(k);
      if (clean_path(e.local) == clean_path(m.local))
        return fail(p + "/local", "\"" + m.local + "\" is the folder \"" + e.local + "\" of " + other +
                                      " too: a file would belong to two mappings; give each mapping a folder of its own (a "
                                      "folder inside another mapping's is fine: it takes that folder from it)");
      if (e.remote.starts_with('~') == m.remote.starts_with('~') && nested_or_same(e.remote, m.remote))
        return fail(p + "/remote", "\"" + m.remote + "\" overlaps \"" + e.remote + "\" of " + other +
                                       ": each mapping needs a remote folder of its own, not inside another's");
    }
    return true;
  }

  bool tunnel(const json& j, const std::string& p, TunnelSpec& t) {
    if (!object(j, p) || !only_keys(j, p, {"name", "kind", "localPort", "remoteHost", "remotePort"})) return false;
    auto name = j.find("name");
    if (name == j.end()) return fail(p + "/name", "expected a non-empty string (required)");
    if (!string(*name, p + "/name", t.name)) return false;
    if (!matches(t.name, kTunnelNamePattern))
      return fail(p + "/name", "expected 1 to 64 letters, digits, '.', '_' or '-'");
    if (auto it = j.find("kind"); it != j.end() && !one_of(*it, p + "/kind", t.kind, {"local", "reverse"}))
      return false;
    auto rp = j.find("remotePort");
    if (rp == j.end()) return fail(p + "/remotePort", "expected a port number from 1 to 65535 (required)");
    if (!port(*rp, p + "/remotePort", t.remote_port)) return false;
    t.local_port = t.remote_port;
    if (auto it = j.find("localPort"); it != j.end() && !port(*it, p + "/localPort", t.local_port)) return false;
    if (auto it = j.find("remoteHost"); it != j.end() && !string(*it, p + "/remoteHost", t.remote_host)) return false;
    return true;
  }

  bool daemon(const json& j, const std::string& p, std::optional<int>& idle_minutes) {
    if (!object(j, p) || !only_keys(j, p, {"idleMinutes"})) return false;
    if (auto it = j.find("idleMinutes"); it != j.end()) {
      int minutes = 0;
      if (!integer(*it, p + "/idleMinutes", minutes, 0, 1440, "a whole number of minutes (0: no daemon)")) return false;
      idle_minutes = minutes;
    }
    return true;
  }

  bool autostop(const json& j, const std::string& p, AutostopConfig& a) {
    if (!object(j, p) || !only_keys(j, p, {"enabled", "idleMinutes", "action", "command", "preStop", "gpuUtilBelow"}))
      return false;
    if (auto it = j.find("enabled"); it != j.end() && !boolean(*it, p + "/enabled", a.enabled)) return false;
    if (auto it = j.find("idleMinutes"); it != j.end() &&
                                         !integer(*it, p + "/idleMinutes", a.idle_minutes, 1, 10080, "a whole number of minutes"))
      return false;
    if (auto it = j.find("action"); it != j.end() && !one_of(*it, p + "/action", a.action, {"stop", "notify", "command"}))
      return false;
    if (auto it = j.find("command"); it != j.end() && !string(*it, p + "/command", a.command)) return false;
    if (auto it = j.find("preStop"); it != j.end() && !string(*it, p + "/preStop", a.pre_stop)) return false;
    if (auto it = j.find("gpuUtilBelow"); it != j.end() &&
                                          !integer(*it, p + "/gpuUtilBelow", a.gpu_util_below, 1, 100, "a percentage"))
      return false;
    if (a.action == "command" && a.command.empty())
      return fail(p + "/command", "expected the command to run (required for action \"command\")");
    if (a.action != "command" && !a.command.empty())
      return fail(p + "/command", "only action \"command\" runs a command; set \"action\": \"command\"");
    return true;
  }

  bool price(const json& j, const std::string& p, cloud::HostPrice& out) {
    if (!object(j, p) || !only_keys(j, p, {"instance", "provider", "usdPerHour", "spotUsdPerHour", "market"})) return false;
    std::string s;
    if (auto it = j.find("instance"); it != j.end()) {
      if (!string(*it, p + "/instance", s)) return false;
      out.instance = s;
    }
    if (auto it = j.find("provider"); it != j.end()) {
      if (!string(*it, p + "/provider", s)) return false;
      out.provider = s;
    }
    for (auto [key, field] : {std::pair{"usdPerHour", &out.usd_per_hour}, std::pair{"spotUsdPerHour", &out.spot_usd_per_hour}}) {
      auto it = j.find(key);
      if (it == j.end()) continue;
      if (!it->is_number() || !(it->get<double>() > 0) || it->get<double>() > 1e6)
        return fail(p + "/" + key, "expected a price in USD per hour, a number above 0");
      *field = it->get<double>();
    }
    if (auto it = j.find("market"); it != j.end()) {
      if (!one_of(*it, p + "/market", s, {"onDemand", "spot"})) return false;
      out.spot = s == "spot";
    }
    if (!out.instance && !out.usd_per_hour)
      return fail(p, "expected \"instance\" (a GPU catalog instance type) or \"usdPerHour\"");
    if (out.spot && !out.spot_usd_per_hour && !out.instance)
      return fail(p + "/spotUsdPerHour", "expected the spot price (required for \"market\": \"spot\" without an instance)");
    return true;
  }

  bool gpu_catalog(const json& j, ProjectConfig& c) {
    if (!j.is_array()) return fail("/gpuCatalog", "expected an array of GPU offers (rows like the built-in catalog's)");
    for (std::size_t i = 0; i < j.size(); ++i) {
      const std::string p = "/gpuCatalog/" + std::to_string(i);
      auto row = cloud::parse_offer(j[i], p, "ferry.json");
      if (!row) {
        // parse_offer's message starts with the pointer; keep it as the error's own pointer.
        auto colon = row.error().find(": ");
        return fail(row.error().substr(0, colon), row.error().substr(colon + 2));
      }
      c.gpu_catalog.push_back(std::move(*row));
    }
    return true;
  }

  bool env_object(const json& j, const std::string& pointer, std::map<std::string, std::string>& out) {
    if (!j.is_object()) return fail(pointer, "expected an object of NAME: \"value\" strings");
    for (const auto& [key, value] : j.items()) {
      std::string p = protocol::pointer_append(pointer, key);
      if (!matches(key, kEnvNamePattern))
        return fail(p, "expected a variable name of letters, digits and '_', not starting with a digit");
      if (!value.is_string()) return fail(p, "expected a string (quote numbers: \"1\")");
      out[key] = value.get<std::string>();
    }
    return true;
  }

  bool relative_path(const json& j, const std::string& pointer, std::string& out, std::string_view relative_to) {
    if (!string(j, pointer, out)) return false;
    if (!matches(out, kLocalPathPattern))
      return fail(pointer, "expected a path relative to the " + std::string(relative_to) + ", without '..'");
    return true;
  }

  // The fields of one entry; which of them a kind needs is checked in launch_kind_rules.
  bool launch_fields(const json& j, const std::string& p, LaunchEntry& e) {
    if (!object(j, p) || !only_keys(j, p, {"name", "kind", "script", "module", "config", "args", "env", "cwd"}))
      return false;
    auto name = j.find("name");
    if (name == j.end()) return fail(p + "/name", "expected a non-empty string (required)");
    if (!string(*name, p + "/name", e.name)) return false;
    if (!matches(e.name, kLaunchNamePattern))
      return fail(p + "/name", "expected 1 to 64 letters, digits, spaces, '.', '_' or '-', starting with a letter, "
                               "digit or '_' and not ending in a space");
    if (auto it = j.find("kind"); it != j.end() && !one_of(*it, p + "/kind", e.kind, {"run", "debug", "train"}))
      return false;
    std::string s;
    if (auto it = j.find("script"); it != j.end()) {
      if (!relative_path(*it, p + "/script", s, "project root")) return false;
      e.script = s;
    }
    if (auto it = j.find("module"); it != j.end()) {
      if (!string(*it, p + "/module", s)) return false;
      if (!matches(s, kModulePattern)) return fail(p + "/module", "expected a Python module name such as pkg.train");
      e.module = s;
    }
    if (auto it = j.find("config"); it != j.end()) {
      if (!relative_path(*it, p + "/config", s, "project root")) return false;
      e.config = s;
    }
    if (auto it = j.find("args"); it != j.end()) {
      if (!it->is_array()) return fail(p + "/args", "expected an array of strings");
      for (std::size_t k = 0; k < it->size(); ++k) {
        if (!(*it)[k].is_string()) return fail(p + "/args/" + std::to_string(k), "expected a string (quote numbers: \"1\")");
        e.args.push_back((*it)[k].get<std::string>());
      }
    }
    if (auto it = j.find("env"); it != j.end() && !env_object(*it, p + "/env", e.env)) return false;
    if (auto it = j.find("cwd"); it != j.end() && !relative_path(*it, p + "/cwd", e.cwd, "mapping root")) return false;
    return launch_kind_rules(j, p, e);
  }

  bool launch_kind_rules(const json& j, const std::string& p, const LaunchEntry& e) {
    if (e.kind == "train") {
      for (const char* key : {"script", "module", "args", "cwd"})
        if (j.contains(key))
          return fail(p + "/" + key, "not used by kind \"train\": ferry-train takes only its config, and runs in "
                                     "the config's folder");
      if (!e.config) return fail(p + "/config", "expected a ferry-train config path (required for kind \"train\")");
      return true;
    }
    if (e.config) return fail(p + "/config", "only kind \"train\" takes a config; use script or module");
    if (e.script && e.module) return fail(p + "/module", "give script or module, not both");
    if (!e.script && !e.module)
      return fail(p + "/script", "expected a script path or a module (one of the two is required)");
    return true;
  }

  bool launch(const json& j, ProjectConfig& c) {
    if (!j.is_array()) return fail("/launch", "expected an array of launch entries");
    for (std::size_t i = 0; i < j.size(); ++i) {
      const std::string p = "/launch/" + std::to_string(i);
      LaunchEntry e;
      if (!launch_fields(j[i], p, e)) return false;
      for (std::size_t k = 0; k < c.launch.size(); ++k)
        if (c.launch[k].name == e.name)
          return fail(p + "/name", "another launch entry (/launch/" + std::to_string(k) + ") has this name");
      c.launch.push_back(std::move(e));
    }
    return true;
  }

  // Runs start in the first mapping, and only it is synced before them: a script or training
  // config elsewhere would not be on the box. Checked once the default mapping is filled in.
  bool launch_inside_first_mapping(const ProjectConfig& c) {
    const Mapping& first = c.mappings.front();
    for (std::size_t i = 0; i < c.launch.size(); ++i) {
      const LaunchEntry& e = c.launch[i];
      const auto& [key, path] = e.script ? std::pair{"script", e.script} : std::pair{"config", e.config};
      if (!path || path_in_mapping(*path, first)) continue;
      return fail("/launch/" + std::to_string(i) + "/" + key,
                  "\"" + *path + "\" is not inside the first mapping's folder \"" + first.local +
                      "\" (runs start there, and only it is synced before a run)");
    }
    return true;
  }

  // true, false, or a list of ports.
  bool auto_forward(const json& v, AutoForwardPorts& out) {
    if (v.is_boolean()) {
      out.enabled = v.get<bool>();
      return true;
    }
    if (!v.is_array()) return fail("/autoForwardPorts", "expected true, false or an array of port numbers");
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_number_integer() || v[i].get<long long>() < 1 || v[i].get<long long>() > 65535)
        return fail("/autoForwardPorts/" + std::to_string(i), "expected a port number from 1 to 65535");
      out.ports.push_back(v[i].get<int>());
    }
    out.enabled = !out.ports.empty();
    return true;
  }

  bool document(const json& doc, ProjectConfig& c) {
    if (!object(doc, "")) return false;
    if (!only_keys(doc, "", {"$schema", "name", "host", "mappings", "exclude", "interpreter", "trainer", "env",
                             "tunnels", "autoForwardPorts", "autostop", "sshConfig", "protect", "launch", "price", "gpuCatalog",
                             "slurm", "daemon"}))
      return false;
    if (auto it = doc.find("$schema"); it != doc.end()) {
      std::string ignored;
      if (!string(*it, "/$schema", ignored, false)) return false;
    }
    if (auto it = doc.find("name"); it != doc.end()) {
      if (!string(*it, "/name", c.name)) return false;
      if (!matches(c.name, kNamePattern))
        return fail("/name", "expected 1 to 100 letters, digits, '.', '_' or '-' (it names the sandbox folder)");
      project_name = c.name;
    }
    if (auto it = doc.find("host"); it != doc.end()) {
      if (!string(*it, "/host", c.host)) return false;
      if (auto h = parse_host(c.host); !h) return fail("/host", h.error());
    }
    if (auto it = doc.find("mappings"); it != doc.end()) {
      if (!it->is_array() || it->empty()) return fail("/mappings", "expected a non-empty array of {local, remote}");
      for (std::size_t i = 0; i < it->size(); ++i) {
        Mapping m;
        const std::string p = "/mappings/" + std::to_string(i);
        if (!mapping((*it)[i], p, m) || !mapping_apart(c.mappings, m, p)) return false;
        c.mappings.push_back(std::move(m));
      }
    }
    if (auto it = doc.find("exclude"); it != doc.end() && !patterns(*it, "/exclude", c.exclude)) return false;
    if (auto it = doc.find("protect"); it != doc.end() && !patterns(*it, "/protect", c.protect)) return false;
    if (auto it = doc.find("interpreter"); it != doc.end() && !string(*it, "/interpreter", c.interpreter))
      return false;
    if (auto it = doc.find("trainer"); it != doc.end() && !string(*it, "/trainer", c.trainer)) return false;
    if (auto it = doc.find("env"); it != doc.end() && !env_object(*it, "/env", c.env)) return false;
    if (auto it = doc.find("tunnels"); it != doc.end()) {
      if (!it->is_array()) return fail("/tunnels", "expected an array of tunnels");
      for (std::size_t i = 0; i < it->size(); ++i) {
        TunnelSpec t;
        if (!tunnel((*it)[i], "/tunnels/" + std::to_string(i), t)) return false;
        c.tunnels.push_back(std::move(t));
      }
    }
    if (auto it = doc.find("autoForwardPorts"); it != doc.end() && !auto_forward(*it, c.auto_forward_ports)) return false;
    if (auto it = doc.find("autostop"); it != doc.end() && !autostop(*it, "/autostop", c.autostop)) return false;
    if (auto it = doc.find("daemon"); it != doc.end() && !daemon(*it, "/daemon", c.daemon_idle_minutes)) return false;
    if (auto it = doc.find("slurm"); it != doc.end()) {
      auto o = protocol::slurm_options_from_json(*it);
      if (!o) return fail("/slurm", o.error());
      c.slurm = *o;
    }
    if (auto it = doc.find("gpuCatalog"); it != doc.end() && !gpu_catalog(*it, c)) return false;
    if (auto it = doc.find("price"); it != doc.end()) {
      cloud::HostPrice hp;
      if (!price(*it, "/price", hp)) return false;
      auto catalog = cloud::effective_catalog(c.gpu_catalog);
      if (!catalog) return fail("/price", catalog.error());
      if (auto rate = cloud::host_rate(hp, *catalog); !rate) return fail("/price/instance", rate.error());
      c.price = hp;
    }
    if (auto it = doc.find("sshConfig"); it != doc.end()) {
      std::string s;
      if (!string(*it, "/sshConfig", s)) return false;
      // Relative to the project's folder, like every other path in ferry.json (not to whatever
      // directory the editor started ferry serve in).
      c.ssh_config = s.starts_with('/') || s.starts_with('~') ? s : (c.root / s).lexically_normal().string();
    }
    if (auto it = doc.find("launch"); it != doc.end() && !launch(*it, c)) return false;
    return true;
  }
};

// A folder name made safe to name a sandbox directory with.
std::string default_name(const fs::path& root) {
  std::string base = root.filename().string();
  if (base.empty()) base = root.parent_path().filename().string();
  std::string out;
  for (char c : base) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    out += ok ? c : '-';
  }
  if (out.size() > 100) out.resize(100);
  if (out.empty() || out == "." || out == "..") out = "project";
  return out;
}

}  // namespace

std::string ConfigError::to_string() const {
  std::string out;
  if (!file.empty()) out += file + ": ";
  out += (pointer.empty() ? std::string("(document)") : pointer) + ": " + message;
  return out;
}

std::optional<std::string> path_in_mapping(std::string_view path, const Mapping& m) {
  auto clean = [](std::string_view p) {
    std::string s = fs::path(p).lexically_normal().generic_string();
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
  };
  const std::string file = clean(path), base = clean(m.local);
  const std::string rel = base == "." ? file : fs::path(file).lexically_relative(base).generic_string();
  if (rel.empty() || rel == "." || rel == ".." || rel.starts_with("../") || rel.starts_with("/")) return std::nullopt;
  return rel;
}

std::optional<fs::path> find_project_file(const fs::path& start) {
  std::error_code ec;
  fs::path dir = fs::absolute(start, ec);
  if (ec) return std::nullopt;
  dir = dir.lexically_normal();
  if (!fs::is_directory(dir, ec)) dir = dir.parent_path();
  while (true) {
    fs::path candidate = dir / kProjectFileName;
    if (fs::is_regular_file(candidate, ec)) return candidate;
    if (!dir.has_relative_path()) return std::nullopt;  // reached "/"
    fs::path parent = dir.parent_path();
    if (parent == dir) return std::nullopt;
    dir = parent;
  }
}

std::expected<ProjectConfig, ConfigError> parse_project(const json& doc, const fs::path& root) {
  ProjectConfig c;
  std::error_code ec;
  c.root = fs::absolute(root, ec).lexically_normal();
  if (c.root.has_relative_path() && c.root.filename().empty()) c.root = c.root.parent_path();
  Validator v;
  v.project_name = default_name(c.root);
  if (!v.document(doc, c)) return std::unexpected(*v.error);
  if (c.name.empty()) c.name = default_name(c.root);
  if (c.mappings.empty()) c.mappings.push_back(Mapping{".", "~/ferry/" + c.name});
  if (!v.launch_inside_first_mapping(c)) return std::unexpected(*v.error);
  return c;
}

std::expected<ProjectConfig, ConfigError> load_project(const fs::path& path) {
  std::error_code ec;
  fs::path file = fs::is_directory(path, ec) ? path / kProjectFileName : path;
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::unexpected(ConfigError{file.string(), "", "cannot read the file"});
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  // Depth-limited: parse_project and its callers copy the document recursively.
  auto doc = protocol::parse_json_text(text);
  if (!doc) {
    const auto& e = doc.error();
    return std::unexpected(ConfigError{file.string(), "",
                                       "invalid JSON at line " + std::to_string(e.line) + ", column " +
                                           std::to_string(e.column) + ": " + e.message});
  }
  auto config = parse_project(*doc, fs::absolute(file, ec).parent_path());
  if (!config) {
    auto err = config.error();
    err.file = file.string();
    return std::unexpected(err);
  }
  return config;
}

json to_json(const ProjectConfig& c) {
  json mappings = json::array();
  for (const auto& m : c.mappings) mappings.push_back({{"local", m.local}, {"remote", m.remote}});
  json tunnels = json::array();
  for (const auto& t : c.tunnels)
    tunnels.push_back({{"name", t.name},
                       {"kind", t.kind},
                       {"localPort", t.local_port},
                       {"remoteHost", t.remote_host},
                       {"remotePort", t.remote_port}});
  json j{{"root", c.root.string()},
         {"name", c.name},
         {"host", c.host},
         {"mappings", mappings},
         {"exclude", c.exclude},
         {"protect", c.protect},
         {"interpreter", c.interpreter},
         {"env", c.env},
         {"tunnels", tunnels},
         {"autoForwardPorts", c.auto_forward_ports.ports.empty() ? json(c.auto_forward_ports.enabled) : json(c.auto_forward_ports.ports)},
         {"autostop",
          {{"enabled", c.autostop.enabled}, {"idleMinutes", c.autostop.idle_minutes}, {"action", c.autostop.action}}}};
  if (!c.autostop.command.empty()) j["autostop"]["command"] = c.autostop.command;
  if (!c.autostop.pre_stop.empty()) j["autostop"]["preStop"] = c.autostop.pre_stop;
  if (c.slurm) j["slurm"] = protocol::to_json(*c.slurm);
  if (c.autostop.gpu_util_below != AutostopConfig{}.gpu_util_below) j["autostop"]["gpuUtilBelow"] = c.autostop.gpu_util_below;
  if (c.price) {
    json price{{"market", c.price->spot ? "spot" : "onDemand"}};
    if (c.price->instance) price["instance"] = *c.price->instance;
    if (c.price->provider) price["provider"] = *c.price->provider;
    if (c.price->usd_per_hour) price["usdPerHour"] = *c.price->usd_per_hour;
    if (c.price->spot_usd_per_hour) price["spotUsdPerHour"] = *c.price->spot_usd_per_hour;
    j["price"] = std::move(price);
  }
  if (!c.gpu_catalog.empty()) {
    j["gpuCatalog"] = json::array();
    for (const auto& o : c.gpu_catalog) j["gpuCatalog"].push_back(cloud::to_json(o));
  }
  if (c.ssh_config) j["sshConfig"] = *c.ssh_config;
  if (!c.trainer.empty()) j["trainer"] = c.trainer;
  if (c.daemon_idle_minutes) j["daemon"] = {{"idleMinutes", *c.daemon_idle_minutes}};
  json launch = json::array();
  for (const auto& e : c.launch) {
    json entry{{"name", e.name}, {"kind", e.kind}, {"args", e.args}, {"env", e.env}};
    if (e.script) entry["script"] = *e.script;
    if (e.module) entry["module"] = *e.module;
    if (e.config) entry["config"] = *e.config;
    if (!e.cwd.empty()) entry["cwd"] = e.cwd;
    launch.push_back(std::move(entry));
  }
  j["launch"] = std::move(launch);
  return j;
}

json starter_config(const std::string& host, const std::string& remote_root, const std::string& project_name) {
  return json{{"name", project_name},
              {"host", host},
              {"mappings", json::array({{{"local", "."}, {"remote", remote_root.empty() ? "~/ferry/" + project_name : remote_root}}})},
              {"exclude", json::array({".git/", ".venv/", "__pycache__/", "*.pyc", ".ipynb_checkpoints/"})},
              {"interpreter", "python3"},
              {"env", json::object({{"PYTHONUNBUFFERED", "1"}})}};
}

}  // namespace ferry::deploy
