// The env mirror and the project venv: see env_mirror.hpp.
#include "helper/env/env_mirror.hpp"

#include "common/xxhash_inline.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/user_dirs.hpp"
#include "common/private_files.hpp"
#include "helper/env/local_command.hpp"
#include "helper/sync/atomic_file.hpp"
#include "helper/sync/sync_engine.hpp"
#include "protocol/json_parse.hpp"
#include "protocol/python_sources.hpp"

namespace ferry::env {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string hex64(std::string_view key) {
  return fmt::format("{:016x}", static_cast<unsigned long long>(XXH3_64bits(key.data(), key.size())));
}

std::string path_safe(std::string_view s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  return out.empty() ? std::string("box") : out.substr(0, 80);
}

// The mirror folder of one sys.path entry: its last name (readable in a traceback) and a hash.
std::string entry_dir_name(const std::string& remote) {
  return path_safe(fs::path(remote).filename().string()) + "-" + hex64(remote).substr(0, 8);
}

std::string human(std::uint64_t b) {
  if (b >= (1ull << 30)) return fmt::format("{:.1f} GiB", b / double(1ull << 30));
  if (b >= (1ull << 20)) return fmt::format("{:.1f} MiB", b / double(1ull << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", b);
}

// Files and bytes under `dir`, ferry's own state (.ferry/) aside.
std::pair<std::uint64_t, std::uint64_t> tree_size(const fs::path& dir) {
  std::uint64_t files = 0, bytes = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename() == ".ferry") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec)) {
      ++files;
      bytes += it->file_size(ec);
    }
  }
  return {files, bytes};
}

// Runs argv (no shell) and returns its stdout, or why not.
std::expected<std::string, std::string> run_local(const std::vector<std::string>& argv) {
  auto r = run_local_command(argv, "", std::chrono::minutes(2));
  if (!r) return std::unexpected(r.error());
  if (r->exit_status != 0)
    return std::unexpected(fmt::format("{} failed (exit {}): {}", argv[0], r->exit_status, (r->err + r->out).substr(0, 400)));
  return std::move(r->out);
}

}  // namespace

json EnvSyncReport::to_json() const {
  json es = json::array();
  for (const auto& e : entries) es.push_back({{"remote", e.remote}, {"local", e.local}, {"files", e.files}, {"bytes", e.bytes}});
  json lo = json::array();
  for (const auto& [name, bytes] : left_out) lo.push_back({{"package", name}, {"bytes", bytes}});
  return {{"mirror", mirror.string()}, {"entries", std::move(es)}, {"filesReceived", files_received},
          {"filesDeleted", files_deleted}, {"filesUnchanged", files_unchanged}, {"bytesOnWire", bytes_on_wire},
          {"filesTotal", files_total}, {"bytesTotal", bytes_total}, {"leftOut", std::move(lo)},
          {"errors", errors}, {"conflicts", conflicts}, {"seconds", seconds}, {"cancelled", cancelled}};
}

EnvSyncReport EnvSyncReport::from_json(const json& j) {
  EnvSyncReport r;
  if (!j.is_object()) return r;
  r.mirror = j.value("mirror", "");
  for (const auto& e : j.value("entries", json::array()))
    r.entries.push_back({e.value("remote", ""), e.value("local", ""), e.value("files", std::uint64_t{0}), e.value("bytes", std::uint64_t{0})});
  r.files_received = j.value("filesReceived", std::uint64_t{0});
  r.files_deleted = j.value("filesDeleted", std::uint64_t{0});
  r.files_unchanged = j.value("filesUnchanged", std::uint64_t{0});
  r.bytes_on_wire = j.value("bytesOnWire", std::uint64_t{0});
  r.files_total = j.value("filesTotal", std::uint64_t{0});
  r.bytes_total = j.value("bytesTotal", std::uint64_t{0});
  for (const auto& l : j.value("leftOut", json::array())) r.left_out.emplace_back(l.value("package", ""), l.value("bytes", std::uint64_t{0}));
  r.errors = j.value("errors", std::vector<std::string>{});
  r.conflicts = j.value("conflicts", std::vector<std::string>{});
  r.seconds = j.value("seconds", 0.0);
  r.cancelled = j.value("cancelled", false);
  return r;
}

std::string EnvSyncReport::one_line() const {
  std::string s = fmt::format("{}{} files received, {} deleted, {} unchanged, {} on the wire; the mirror holds {} files ({}) in {:.2f} s",
                              cancelled ? "(cancelled) " : "", files_received, files_deleted, files_unchanged, human(bytes_on_wire),
                              files_total, human(bytes_total), seconds);
  if (!errors.empty()) s += fmt::format(", {} errors", errors.size());
  if (!conflicts.empty()) s += fmt::format(", {} conflicts", conflicts.size());
  return s;
}

fs::path default_cache_root() {
  return platform::cache_home().value_or(fs::temp_directory_path() / ".cache") / "ferry" / "env";
}

fs::path mirror_dir(const fs::path& cache_root, const std::string& host, const std::string& interpreter) {
  return cache_root / (path_safe(host) + "-" + hex64(host + "\n" + interpreter));
}

std::set<std::string> leave_out_over_cap(const std::vector<std::pair<std::string, std::uint64_t>>& files, std::uint64_t budget,
                                         std::vector<std::pair<std::string, std::uint64_t>>& dropped) {
  std::map<std::string, std::uint64_t, std::less<>> per_package;
  std::uint64_t total = 0;
  for (const auto& [path, size] : files) {
    per_package[std::string(protocol::python_package_of(path))] += size;
    total += size;
  }
  std::set<std::string> out;
  if (total <= budget) return out;
  std::vector<std::pair<std::string, std::uint64_t>> by_size(per_package.begin(), per_package.end());
  std::sort(by_size.begin(), by_size.end(), [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  std::set<std::string, std::less<>> gone;
  for (const auto& [name, size] : by_size) {
    if (total <= budget) break;
    gone.insert(name);
    dropped.emplace_back(name, size);
    total -= size;
  }
  for (const auto& [path, size] : files)
    if (gone.contains(protocol::python_package_of(path))) out.insert(path);
  return out;
}

std::expected<EnvSyncReport, Error> sync_env(remote::Endpoint& endpoint, const EnvInfo& info, const EnvSyncOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  EnvSyncReport report;
  const fs::path cache = o.cache_root.empty() ? default_cache_root() : o.cache_root;
  report.mirror = mirror_dir(cache, o.host, o.interpreter);
  // The mirror is ferry's (owner-only); the trees pulled into it keep the box's modes.
  std::error_code ec = posix::make_private_dirs(report.mirror);
  if (ec) return std::unexpected(Error{ErrorKind::io, "cannot create the mirror " + report.mirror.string() + ": " + ec.message()});
  std::uint64_t budget = o.cap_bytes;
  std::set<std::string> wanted_dirs;
  for (const auto& entry : info.sys_path) {
    if (entry.kind != "site") continue;  // the local interpreter brings its own standard library
    if (o.cancelled && o.cancelled()) {
      report.cancelled = true;
      break;
    }
    if (o.entry_started) o.entry_started(entry.path);
    const std::string dir_name = entry_dir_name(entry.path);
    wanted_dirs.insert(dir_name);
    sync::SyncTarget target;
    target.local_root = report.mirror / dir_name;
    target.host = o.host;
    target.remote_root = entry.path;
    target.remote_source = entry.path;
    fs::create_directories(target.local_root, ec);
    sync::SyncOptions so;
    so.pull_mirror = true;
    so.force = true;  // the mirror is ferry's: a file changed there is taken back from the box
    so.cancelled = o.cancelled;
    std::uint64_t kept = 0;
    so.pull_leave_out = [&](const std::vector<std::pair<std::string, std::uint64_t>>& files) {
      auto out = leave_out_over_cap(files, budget, report.left_out);
      for (const auto& [path, size] : files)
        if (!out.contains(path)) kept += size;
      return out;
    };
    sync::SyncEngine engine(endpoint, target);
    auto done = engine.pull({""}, so);
    engine.finish();
    if (!done) {
      // The agent gone: no other entry mirrors either, and the caller reconnects and retries.
      if (done.error().kind == ErrorKind::agent_lost) return std::unexpected(Error{ErrorKind::agent_lost, entry.path + ": " + done.error().message});
      report.errors.push_back(entry.path + ": " + done.error().message);
      continue;
    }
    budget -= std::min(budget, kept);
    report.files_received += done->files_sent;
    report.files_deleted += done->files_deleted;
    report.files_unchanged += done->unchanged;
    report.bytes_on_wire += done->bytes_on_wire;
    for (const auto& e : done->errors) report.errors.push_back(entry.path + ": " + e);
    for (const auto& c : done->conflicts) report.conflicts.push_back(entry.path + "/" + c.path + ": " + c.message);
    if (done->cancelled) report.cancelled = true;
    auto [files, bytes] = tree_size(target.local_root);
    report.entries.push_back({entry.path, target.local_root.string(), files, bytes});
    report.files_total += files;
    report.bytes_total += bytes;
  }
  std::sort(report.left_out.begin(), report.left_out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  // Entries the interpreter no longer has: the cache's own folders, removed whole.
  if (!report.cancelled)
    for (const auto& d : fs::directory_iterator(report.mirror, ec))
      if (d.is_directory() && !wanted_dirs.contains(d.path().filename().string())) fs::remove_all(d.path(), ec);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  json state = report.to_json();
  state["syncedAt"] = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  state["host"] = o.host;
  state["info"] = to_json(info);
  if (auto ok = sync::write_file_atomically(report.mirror / "mirror.json", state.dump(2) + "\n"); !ok)
    report.errors.push_back("mirror.json: " + ok.error());
  return report;
}

std::optional<MirrorState> read_mirror_state(const fs::path& mirror) {
  std::ifstream in(mirror / "mirror.json");
  if (!in) return std::nullopt;
  auto parsed = protocol::parse_json_text(std::string(std::istreambuf_iterator<char>(in), {}));
  if (!parsed || !parsed->is_object()) return std::nullopt;
  const json& j = *parsed;
  MirrorState s;
  s.mirror = mirror;
  s.synced_at = j.value("syncedAt", std::int64_t{0});
  s.files = j.value("filesTotal", std::uint64_t{0});
  s.bytes = j.value("bytesTotal", std::uint64_t{0});
  if (j.contains("entries") && j["entries"].is_array())
    for (const auto& e : j["entries"]) s.local_paths.push_back(e.value("local", ""));
  if (j.contains("leftOut") && j["leftOut"].is_array())
    for (const auto& e : j["leftOut"]) s.left_out.emplace_back(e.value("package", ""), e.value("bytes", std::uint64_t{0}));
  if (j.contains("info"))
    if (auto info = env_info_from_json(j["info"])) s.info = std::move(*info);
  return s;
}

MirrorCheck mirror_check(const std::optional<MirrorState>& state, std::int64_t now) {
  if (!state)
    return {"warn", "no mirror of the box's Python packages yet (the editor cannot complete or resolve them)",
            "ferry env sync (then select .ferry/venv as the project interpreter: docs/ide.md)"};
  const std::int64_t age = std::max<std::int64_t>(0, now - state->synced_at);
  const std::string when = age < 120      ? fmt::format("{} s ago", age)
                           : age < 7200   ? fmt::format("{} min ago", age / 60)
                           : age < 172800 ? fmt::format("{} h ago", age / 3600)
                                          : fmt::format("{} days ago", age / 86400);
  std::string detail = fmt::format("{} files, {}, synced {} ({})", state->files, human(state->bytes), when, state->mirror.string());
  if (!state->left_out.empty()) {
    std::string names;
    for (std::size_t k = 0; k < state->left_out.size() && k < 3; ++k) names += (k ? ", " : "") + state->left_out[k].first;
    return {"warn", detail + "; over the size cap, left out: " + names, "ferry env sync --cap BYTES (a larger cap)"};
  }
  if (age > 7 * 86400) return {"warn", detail, "ferry env sync (the box's packages may have changed since)"};
  return {"pass", detail, ""};
}

fs::path project_venv_python(const fs::path& project_root) { return project_root / ".ferry" / "venv" / "bin" / "python"; }

std::expected<fs::path, std::string> write_project_venv(const fs::path& project_root, const MirrorState& state,
                                                        const std::string& local_python) {
  const fs::path venv = project_root / ".ferry" / "venv";
  const fs::path python = project_venv_python(project_root);
  // .ferry/venv is ferry's: made owner-only before `python -m venv` fills it (an existing one too).
  if (auto ec = posix::make_private_dirs(venv))
    return std::unexpected("cannot create " + venv.string() + ": " + ec.message());
  std::error_code ec;
  if (!fs::exists(python, ec)) {
    // No pip (nothing gets installed into it), no system site-packages (a laptop's own torch
    // must not stand in for the box's).
    if (auto made = run_local({local_python, "-m", "venv", "--without-pip", venv.string()}); !made)
      return std::unexpected("creating " + venv.string() + " with " + local_python + ": " + made.error() +
                             " (install python3-venv, or name another python3 with --python)");
  }
  auto purelib = run_local({python.string(), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"});
  if (!purelib) return std::unexpected(purelib.error());
  std::string site = *purelib;
  while (!site.empty() && (site.back() == '\n' || site.back() == '\r')) site.pop_back();
  std::string pth = "# Written by `ferry env sync`: the box's Python packages (sources only), mirrored from\n# " +
                    (state.info ? state.info->interpreter + " " + state.info->python : std::string("the box")) + ". Do not edit.\n";
  for (const auto& p : state.local_paths) pth += p + "\n";
  fs::create_directories(site, ec);
  if (auto ok = sync::write_file_atomically(fs::path(site) / "ferry-box-env.pth", pth); !ok) return std::unexpected(ok.error());
  return python;
}

}  // namespace ferry::env
