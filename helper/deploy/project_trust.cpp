// Project trust decisions: see project_trust.hpp.
#include "helper/deploy/project_trust.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>

#include "common/path_within.hpp"
#include "common/private_files.hpp"
#include "common/sha256.hpp"
#include "common/user_dirs.hpp"
#include "helper/ssh/ssh_config.hpp"
#include "helper/sync/atomic_file.hpp"
#include "protocol/json_parse.hpp"

namespace ferry::deploy {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kTrustedFields[] = {"host", "sshConfig", "mappings", "interpreter", "trainer",
                                          "env",  "tunnels",   "autostop", "launch"};

fs::path home_dir() { return platform::home_dir().value_or(fs::path()); }

// The path ferry.json's sshConfig names, as the SSH layer reads it (~ expanded); a relative path
// is taken from the project root, where the person reading ferry.json would look for it.
fs::path ssh_config_path(const ProjectConfig& c) {
  std::string p = *c.ssh_config;
  if (p == "~" || p.starts_with("~/")) return home_dir() / p.substr(std::min<std::size_t>(2, p.size()));
  fs::path path(p);
  return path.is_absolute() ? path : c.root / path;
}

std::string file_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return "<unreadable>";
  return std::string(std::istreambuf_iterator<char>(in), {});
}

fs::path real_path(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::canonical(p, ec);
  if (ec) r = fs::weakly_canonical(p, ec);
  return ec ? p.lexically_normal() : r;
}

// `inner` is `outer` or below it, component by component (without regard to case on Windows).
bool is_within(const fs::path& inner, const fs::path& outer) { return ferry::posix::is_within(inner, outer); }

std::expected<json, std::string> read_json_file(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return json();
  auto j = protocol::parse_json_text(file_bytes(file));
  if (!j) return std::unexpected(file.string() + " is not valid JSON");
  return std::move(*j);
}

std::expected<void, std::string> make_private_dir(const fs::path& dir) {
  if (const std::error_code ec = ferry::posix::make_private_dirs(dir)) return std::unexpected("cannot create " + dir.string() + ": " + ec.message());
  return {};
}

// Now as ISO 8601 in UTC, from the calendar types (no gmtime_r on Windows).
std::string now_utc() {
  using namespace std::chrono;
  const auto now = floor<seconds>(system_clock::now());
  const auto day = floor<days>(now);
  const year_month_day date{day};
  const hh_mm_ss time{now - day};
  char text[32];
  std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()), static_cast<int>(time.hours().count()), static_cast<int>(time.minutes().count()),
                static_cast<int>(time.seconds().count()));
  return text;
}

}  // namespace

namespace {

// What the project's own ssh config makes of its host, hops included: files it Includes can change
// where the key logs in without a byte of the named file changing.
json resolved_host(const ProjectConfig& c) {
  if (c.host == "local") return json();
  auto host = ssh::resolve_host(c.host, ssh_config_path(c).string());
  if (!host) return json{{"error", host.error().to_string()}};
  auto view = [](const ssh::HostConfig& h) {
    return json{{"at", describe(h)},
                {"identities", h.identity_files},
                {"knownHosts", h.user_known_hosts_files},
                {"strict", std::string(ssh::to_string(h.strict_host_key_checking))},
                {"proxyCommand", h.proxy_command.value_or("")}};
  };
  json hops = json::array();
  for (const auto& hop : host->proxy_jump) hops.push_back(view(hop));
  return json{{"host", view(*host)}, {"jump", hops}};
}

}  // namespace

TrustDigests trust_digests(const ProjectConfig& config) {
  const json view = to_json(config);
  TrustDigests out;
  for (const char* field : kTrustedFields) {
    json value = view.contains(field) ? view[field] : json();
    if (std::string_view(field) == "sshConfig" && config.ssh_config)
      value = json{{"path", *config.ssh_config},
                   {"bytes", sha256_hex(file_bytes(ssh_config_path(config)))},
                   {"resolved", resolved_host(config)}};
    out[field] = sha256_hex(value.dump());
  }
  return out;
}

// ---- the store ----

fs::path TrustStore::default_dir() {
  auto config = platform::config_home();
  return config ? *config / "ferry" / "trust" : fs::path();
}

TrustStore::TrustStore(fs::path dir) : dir_(std::move(dir)) {}

fs::path TrustStore::record_file(const fs::path& real_root) const {
  return dir_ / "projects" / (sha256_hex(real_root.string()).substr(0, 32) + ".json");
}

std::vector<fs::path> TrustStore::trusted_folders() const {
  std::vector<fs::path> out;
  if (dir_.empty()) return out;
  auto doc = read_json_file(dir_ / "folders.json");
  if (!doc || !doc->is_object() || !(*doc)["folders"].is_array()) return out;
  for (const auto& f : (*doc)["folders"])
    if (f.is_string() && f.get<std::string>().starts_with('/')) out.emplace_back(f.get<std::string>());
  return out;
}

std::vector<fs::path> TrustStore::trusted_projects() const {
  std::vector<fs::path> out;
  std::error_code ec;
  if (dir_.empty() || !fs::is_directory(dir_ / "projects", ec)) return out;
  for (const auto& e : fs::directory_iterator(dir_ / "projects", ec)) {
    auto doc = read_json_file(e.path());
    if (doc && doc->is_object() && (*doc)["root"].is_string()) out.emplace_back((*doc)["root"].get<std::string>());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TrustStatus TrustStore::check(const ProjectConfig& config) const {
  TrustStatus status;
  if (dir_.empty()) return status;
  const fs::path root = real_path(config.root);
  if (is_within(real_path(dir_), root)) return status;  // a store the repository could have written
  for (const auto& folder : trusted_folders()) {
    if (is_within(root, real_path(folder))) {
      status.state = TrustState::trusted;
      status.via = folder.string();
      return status;
    }
  }
  auto doc = read_json_file(record_file(root));
  if (!doc || !doc->is_object() || (*doc).value("root", "") != root.string() || !(*doc)["fields"].is_object())
    return status;
  const json& recorded = (*doc)["fields"];
  for (const auto& [field, digest] : trust_digests(config))
    if (!recorded.contains(field) || recorded[field] != digest) status.changed.push_back(field);
  status.state = status.changed.empty() ? TrustState::trusted : TrustState::changed;
  if (status.trusted()) status.via = "project";
  return status;
}

std::expected<void, std::string> TrustStore::trust(const ProjectConfig& config) {
  if (dir_.empty()) return std::unexpected("no place to record trust: neither XDG_CONFIG_HOME nor HOME is set");
  const fs::path root = real_path(config.root);
  if (is_within(real_path(dir_), root))
    return std::unexpected("the trust store " + dir_.string() + " is inside the project; nothing recorded");
  if (auto made = make_private_dir(dir_); !made) return made;
  if (auto made = make_private_dir(dir_ / "projects"); !made) return made;
  json fields = json::object();
  for (const auto& [field, digest] : trust_digests(config)) fields[field] = digest;
  json record{{"root", root.string()}, {"fields", std::move(fields)}, {"trustedAt", now_utc()}};
  return sync::write_file_atomically(record_file(root), record.dump(2) + "\n", 0600);
}

std::expected<bool, std::string> TrustStore::revoke(const fs::path& root) {
  if (dir_.empty()) return false;
  std::error_code ec;
  const bool removed = fs::remove(record_file(real_path(root)), ec);
  if (ec) return std::unexpected("cannot forget " + root.string() + ": " + ec.message());
  return removed;
}

std::expected<void, std::string> TrustStore::trust_folder(const fs::path& folder) {
  if (dir_.empty()) return std::unexpected("no place to record trust: neither XDG_CONFIG_HOME nor HOME is set");
  const fs::path real = real_path(folder);
  if (real == real.root_path() || real == real_path(home_dir()))
    return std::unexpected("trusting every project under " + real.string() + " would trust whatever is cloned there; name a narrower folder");
  auto folders = trusted_folders();
  if (std::find(folders.begin(), folders.end(), real) == folders.end()) folders.push_back(real);
  json list = json::array();
  for (const auto& f : folders) list.push_back(f.string());
  if (auto made = make_private_dir(dir_); !made) return made;
  return sync::write_file_atomically(dir_ / "folders.json", json{{"folders", list}}.dump(2) + "\n", 0600);
}

// ---- what the person is shown ----

namespace {

void summarize_host(const ProjectConfig& c, TrustSummary& s) {
  if (c.host == "local") {
    s.actions.push_back("run the agent and your runs on THIS machine (host \"local\"), with " + c.interpreter);
    return;
  }
  s.actions.push_back("log in to " + c.host + " with your SSH keys and install ferry-agent there");
  if (c.ssh_config) {
    const fs::path file = ssh_config_path(c);
    if (is_within(real_path(file), real_path(c.root)))
      s.warnings.push_back("the SSH settings come from " + *c.ssh_config +
                           ", a file inside this project: the repository chooses which machine your key logs in to");
  }
  auto host = ssh::resolve_host(c.host, c.ssh_config ? std::optional<std::string>(ssh_config_path(c).string()) : std::nullopt);
  if (!host) return;
  if (host->strict_host_key_checking != ssh::StrictHostKeyChecking::kYes)
    s.warnings.push_back("StrictHostKeyChecking is " + std::string(ssh::to_string(host->strict_host_key_checking)) + " for " +
                         c.host + ": an unknown host key would be accepted without asking you");
  for (const auto& k : host->user_known_hosts_files)
    if (k == "/dev/null" || is_within(real_path(k), real_path(c.root)))
      s.warnings.push_back("UserKnownHostsFile " + k + ": host keys are not checked against your own known_hosts");
  if (host->proxy_command) s.warnings.push_back("ProxyCommand " + *host->proxy_command + " (ferry refuses to run it)");
  for (const auto& hop : host->proxy_jump) s.actions.push_back("go through " + describe(hop) + " (ProxyJump)");
}

void summarize_commands(const ProjectConfig& c, TrustSummary& s) {
  if (c.host != "local") s.actions.push_back("run " + c.interpreter + " on " + c.host);
  for (const auto& m : c.mappings) s.actions.push_back("write and delete files under " + m.remote + " (from " + m.local + ")");
  for (const auto& t : c.tunnels) {
    if (t.kind == "reverse")
      s.warnings.push_back("tunnel " + t.name + " gives " + c.host + " a way to 127.0.0.1:" + std::to_string(t.local_port) +
                           " on this machine");
    else
      s.actions.push_back("open tunnel " + t.name + ": 127.0.0.1:" + std::to_string(t.local_port) + " -> " + t.remote_host + ":" +
                          std::to_string(t.remote_port));
  }
  if (c.autostop.enabled) {
    s.actions.push_back("arm autostop on " + c.host + " (" + c.autostop.action + " after " +
                        std::to_string(c.autostop.idle_minutes) + " idle minutes)");
    if (!c.autostop.command.empty()) s.warnings.push_back("autostop runs the shell command `" + c.autostop.command + "`");
    if (!c.autostop.pre_stop.empty()) s.warnings.push_back("autostop runs the shell command `" + c.autostop.pre_stop + "` first");
  }
  if (!c.trainer.empty()) s.actions.push_back("run the trainer " + c.trainer);
  if (!c.env.empty()) s.actions.push_back("set " + std::to_string(c.env.size()) + " environment variable(s) for runs");
}

}  // namespace

TrustSummary trust_summary(const ProjectConfig& config) {
  TrustSummary s;
  summarize_host(config, s);
  summarize_commands(config, s);
  return s;
}

std::string trust_question(const ProjectConfig& config, const TrustStatus& status) {
  std::string text;
  if (status.state == TrustState::changed) {
    text = "ferry.json of " + config.root.string() + " changed since you trusted it (";
    for (std::size_t i = 0; i < status.changed.size(); ++i) text += (i ? ", " : "") + status.changed[i];
    text += ").";
  } else {
    text = "Do you trust the project " + config.root.string() + "?";
  }
  const auto summary = trust_summary(config);
  text += " Its ferry.json would make ferry:";
  for (const auto& a : summary.actions) text += "\n  - " + a;
  if (!summary.warnings.empty()) text += "\nLook twice:";
  for (const auto& w : summary.warnings) text += "\n  ! " + w;
  text += "\nTrust it only if you trust where this repository came from.";
  return text;
}

std::string untrusted_message(const ProjectConfig& config, const TrustStatus& status) {
  std::string why = status.state == TrustState::changed ? "ferry.json changed since it was trusted" : "it is not trusted yet";
  return "the project " + config.root.string() + " may not connect, run or open tunnels: " + why +
         " (trust it with `ferry trust-project " + config.root.string() + "`, or from the editor's prompt)";
}

}  // namespace ferry::deploy
