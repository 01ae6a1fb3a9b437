// env/info and env/sync: the box interpreter's facts, and the mirror of its package sources for
// the editor (helper/env/), over the project's one link. After a project's first connect the
// server also brings the mirror up to date in the background when the box's packages changed
// since the last sync (the installed distributions differ), so the editor's Python language
// server sees a `pip install` on the box without anyone asking.
#include <condition_variable>
#include <mutex>
#include <stop_token>

#include <spdlog/spdlog.h>

#include "helper/env/env_mirror.hpp"
#include "helper/env/env_probe.hpp"
#include "helper/server/error_codes.hpp"
#include "helper/server/host_methods.hpp"
#include "helper/server/server_context.hpp"
#include "protocol/json_reader.hpp"
#include "protocol/messages_env.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
using json = nlohmann::json;

namespace {

struct EnvInfoParams {
  std::optional<std::string> path;
  bool torch = true;
};

std::optional<p::DecodeError> from_json(const json& j, EnvInfoParams& out, const std::string& ptr) {
  p::ObjectReader r(j, ptr);
  r.optional("path", out.path);
  r.optional("torch", out.torch);
  return r.error();
}

struct EnvSyncParams {
  std::optional<std::string> path;
  std::uint64_t cap_bytes = env::kDefaultMirrorCap;
  bool venv = true;
  std::string local_python = "python3";
};

std::optional<p::DecodeError> from_json(const json& j, EnvSyncParams& out, const std::string& ptr) {
  p::ObjectReader r(j, ptr);
  r.optional("path", out.path);
  std::optional<std::int64_t> cap;
  r.optional("capBytes", cap);
  if (cap) out.cap_bytes = *cap > 0 ? static_cast<std::uint64_t>(*cap) : 0;
  r.optional("venv", out.venv);
  r.optional("localPython", out.local_python);
  r.check(out.cap_bytes > 0, "capBytes", "expected a positive number of bytes");
  r.check(!out.local_python.empty(), "localPython", "expected a non-empty string");
  return r.error();
}

std::expected<p::EnvSyncResult, p::ResponseError> run_env_sync(ProjectLink& link, const EnvSyncParams& params, const std::function<bool()>& cancelled,
                                                   const std::function<void(const std::string&)>& report) {
  const auto config = link.config();
  auto info = env::probe_env(link.endpoint(), config.interpreter, false);
  if (!info) return std::unexpected(response_error(info.error(), "env/sync"));
  env::EnvSyncOptions o;
  o.host = link.host();
  o.interpreter = config.interpreter;
  o.cap_bytes = params.cap_bytes;
  o.cancelled = cancelled;
  o.entry_started = report;
  auto done = env::sync_env(link.endpoint(), *info, o);
  if (!done) return std::unexpected(response_error(done.error(), "env/sync"));
  p::EnvSyncResult out;
  out.report = done->to_json();
  if (params.venv)
    if (auto state = env::read_mirror_state(done->mirror)) {
      if (auto venv = env::write_project_venv(config.root, *state, params.local_python)) out.venv_python = venv->string();
      else out.venv_error = venv.error();
    }
  return out;
}

// The installed distributions as "name==version" lines: what "the box's packages changed" means.
std::string distributions_key(const env::EnvInfo& info) {
  std::string key;
  for (const auto& d : info.distributions) key += d.name + "==" + d.version + "\n";
  for (const auto& s : info.sys_path) key += s.path + "\n";
  return key;
}

void refresh_env_mirror_if_stale(ProjectLink& link) {
  const auto config = link.config();
  auto info = env::probe_env(link.endpoint(), config.interpreter, false);
  if (!info) {
    spdlog::info("env: not mirroring the box's packages: {}", info.error().message);
    return;
  }
  const auto mirror = env::mirror_dir(env::default_cache_root(), link.host(), config.interpreter);
  auto state = env::read_mirror_state(mirror);
  if (state && state->info && distributions_key(*state->info) == distributions_key(*info)) return;
  spdlog::info("env: the box's packages changed since the last mirror; syncing {}", mirror.string());
  EnvSyncParams params;
  auto done = run_env_sync(link, params, [&link] { return !link.usable(); }, {});
  if (!done) spdlog::warn("env: background sync: {}", done.error().message);
}

}  // namespace

void keep_env_mirror_fresh(ProjectLink& link, std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  bool run_ended = false;
  // On the endpoint's reader thread: only note it (no calls from there).
  auto sub = link.endpoint().subscribe([&](const p::Notification& n) {
    if (n.method != "run/exited") return;
    std::lock_guard lock(mu);
    run_ended = true;
    cv.notify_all();
  });
  refresh_env_mirror_if_stale(link);
  while (!stop.stop_requested()) {
    {
      std::unique_lock lock(mu);
      if (!cv.wait(lock, stop, [&] { return run_ended; })) return;
      run_ended = false;
    }
    if (link.usable()) refresh_env_mirror_if_stale(link);
  }
}

void bind_env_methods(p::BindingTable& table, LinkOf link_of) {
  table.request<EnvInfoParams, p::EnvInfoResult>(
      p::method::kEnvInfo,
      [link_of](const EnvInfoParams& params, p::CallContext& call) -> std::expected<p::EnvInfoResult, p::ResponseError> {
        auto link = link_of(params.path, call);
        if (!link) return std::unexpected(link.error());
        auto info = env::probe_env((*link)->endpoint(), (*link)->config().interpreter, params.torch);
        if (!info) return std::unexpected(response_error(info.error(), "env/info"));
        return p::EnvInfoResult{env::to_json(*info)};
      },
      p::Execution::worker);
  table.request<EnvSyncParams, p::EnvSyncResult>(
      p::method::kEnvSync,
      [link_of](const EnvSyncParams& params, p::CallContext& call) -> std::expected<p::EnvSyncResult, p::ResponseError> {
        auto link = link_of(params.path, call);
        if (!link) return std::unexpected(link.error());
        auto progress = call.progress();
        progress.begin("Mirroring the box's Python packages");
        auto out = run_env_sync(**link, params, [&call] { return call.cancelled(); },
                                [&progress](const std::string& entry) { progress.report(entry); });
        if (call.cancelled()) return std::unexpected(p::cancelled_error(call.method()));
        progress.end(out ? std::optional<std::string>(out->report.value("filesReceived", 0) ? "updated" : "up to date") : std::nullopt);
        return out;
      },
      p::Execution::worker);
}

}  // namespace ferry::server
