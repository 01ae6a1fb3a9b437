// What the project socket serves (project_socket.hpp): a terminal's ferry command on the link
// and warm engines of this server. `ferry/hello` first (versions must match, and it says whether
// the project is linked now, and whether this is a daemon), then `sync/push`, `sync/pull` and
// `sync/status` as the editor has them, except that nothing is put to the editor: mass deletes not
// confirmed in the params are held; `agent/call` relays a terminal command's agent request;
// `env/info` and `env/sync` as the editor has them; `trainer/ensure` (ferry train's trainer); `link/forward` and `link/unforward` open and close a command's tunnels; `ferry/stop` ends a
// daemon (an editor's server ends with the editor). Bound once per connection: what a command
// leaves on the link ends with its connection (socket_connection.hpp).
#include <unistd.h>

#include "common/build_info.hpp"
#include "helper/server/host_methods.hpp"
#include "helper/server/project_lookup.hpp"
#include "helper/server/server_state.hpp"
#include "helper/server/socket_connection.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/train/trainer_install.hpp"
#include "protocol/json_binary.hpp"
#include "protocol/json_reader.hpp"
#include "protocol/messages_sync.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
using json = nlohmann::json;

namespace {

struct AgentCallParams {
  std::optional<std::string> path;
  std::string method;
  json params;
};
std::optional<p::DecodeError> from_json(const json& j, AgentCallParams& out, const std::string& ptr) {
  p::ObjectReader r(j, ptr);
  r.optional("path", out.path);
  r.required("method", out.method);
  r.check(!out.method.empty(), "method", "expected the agent method");
  if (j.is_object() && j.contains("params")) out.params = p::text_as_binary(j["params"]);
  return r.error();
}

struct ForwardParams {
  std::optional<std::string> path;
  remote::ForwardSpec spec;
};
std::optional<p::DecodeError> from_json(const json& j, ForwardParams& out, const std::string& ptr) {
  p::ObjectReader r(j, ptr);
  r.optional("path", out.path);
  auto spec = remote::forward_spec_from_json(j.is_object() ? j.value("spec", json::object()) : json());
  if (spec) out.spec = *spec;
  r.check(spec.has_value(), "spec", spec ? std::string() : spec.error());
  return r.error();
}

struct UnforwardParams {
  int id = 0;
};
std::optional<p::DecodeError> from_json(const json& j, UnforwardParams& out, const std::string& ptr) {
  p::ObjectReader r(j, ptr);
  r.required("id", out.id);
  return r.error();
}

// The project's link, when it is up: a command never makes the live process connect.
std::expected<ProjectLinkPtr, p::ResponseError> live_link(ServerState& s, const std::optional<std::string>& path) {
  auto config = lookup_project(path, s.workspace);
  if (!config) return std::unexpected(config.error());
  ProjectLinkPtr link = s.sessions.current(config->root);
  if (!link || !link->usable())
    return std::unexpected(p::ResponseError{p::error_code::kAgentUnavailable, config->root.string() + " is not linked here", {}});
  return link;
}

struct TrainerParams {
  std::optional<std::string> path;
  std::optional<std::string> interpreter;  // default: ferry.json's
  std::map<std::string, std::string> env;
};
std::optional<p::DecodeError> from_json(const json& j, TrainerParams& out, const std::string& ptr) {
  p::ObjectReader r(j, ptr);
  r.optional("path", out.path);
  r.optional("interpreter", out.interpreter);
  r.optional("env", out.env);
  return r.error();
}

// `ferry train` riding: the box's ferry-train found or built on this process's SSH link (the
// build's progress bar as $/progress reports).
void bind_trainer_ensure(p::BindingTable& table, ServerState& s) {
  table.request<TrainerParams, json>(
      "trainer/ensure",
      [&s](const TrainerParams& params, p::CallContext& call) -> std::expected<json, p::ResponseError> {
        auto link = live_link(s, params.path);
        if (!link) return std::unexpected(link.error());
        auto* ssh = dynamic_cast<remote::SshEndpoint*>(&(*link)->endpoint());
        if (!ssh) return std::unexpected(p::ResponseError{p::error_code::kInvalidParams, "trainer/ensure: not an SSH link", {}});
        training::TrainerInstallOptions o;
        o.interpreter = params.interpreter.value_or((*link)->config().interpreter);
        o.env = params.env;
        auto progress = call.progress();
        progress.begin("ferry-train on the box");
        o.on_progress = [&progress](const training::BuildProgressParser& b) { progress.report(b.bar(40)); };
        auto installed = training::ensure_trainer(*ssh, o);
        progress.end(installed ? std::optional<std::string>(installed->built ? "built" : "ready") : std::nullopt);
        if (!installed) return std::unexpected(p::ResponseError{p::error_code::kIoError, installed.error(), {}});
        return json{{"path", installed->path}, {"built", installed->built}, {"version", installed->version}};
      },
      p::Execution::worker);
}

struct StopParams {
  std::optional<std::string> why;  // for the daemon's log
};
std::optional<p::DecodeError> from_json(const json& j, StopParams& out, const std::string& ptr) {
  p::ObjectReader r(j, ptr);
  r.optional("why", out.why);
  return r.error();
}

}  // namespace

void bind_socket_methods(p::BindingTable& table, ServerState& s, SocketConnection& connection) {
  // `ferry env` and `ferry env sync`, as the editor has them, on the link that is up.
  bind_env_methods(table, [&s](const std::optional<std::string>& path, p::CallContext&) { return live_link(s, path); });
  bind_trainer_ensure(table, s);
  table.request<p::SyncProjectParams, json>(
      "ferry/hello",
      [&s](const p::SyncProjectParams& params, p::CallContext&) -> std::expected<json, p::ResponseError> {
        auto config = lookup_project(params.path, s.workspace);
        ProjectLinkPtr link = config ? s.sessions.current(config->root) : nullptr;
        json hello{{"version", ferry::version_text()},
                   {"pid", static_cast<long long>(::getpid())},
                   {"linked", link != nullptr && link->usable()},
                   {"endpoint", link ? link->endpoint().description() : std::string()},
                   {"daemon", s.daemon.active()}};
        if (auto idle = s.daemon.idle_seconds()) hello["idleSeconds"] = *idle;
        if (link) {
          const auto& a = link->info();
          hello["mappingRoot"] = link->mapping_root();
          hello["agent"] = {{"protocolVersion", a.protocol_version}, {"version", a.version}, {"pid", a.pid}, {"root", a.root},
                            {"os", a.os}, {"arch", a.arch}, {"hostname", a.hostname}};
        }
        return hello;
      },
      p::Execution::inline_);
  // A terminal command's agent call on this process's link (helper/cli/relay_endpoint.hpp).
  table.request<AgentCallParams, json>(
      "agent/call",
      [&s, &connection](const AgentCallParams& params, p::CallContext&) -> std::expected<json, p::ResponseError> {
        auto link = live_link(s, params.path);
        if (!link) return std::unexpected(link.error());
        auto result = connection.call(*link, params.method, params.params);
        if (!result) return std::unexpected(std::move(result.error()));
        return p::binary_as_text(*result);
      },
      p::Execution::worker);
  table.request<ForwardParams, json>(
      "link/forward",
      [&s, &connection](const ForwardParams& params, p::CallContext&) -> std::expected<json, p::ResponseError> {
        auto link = live_link(s, params.path);
        if (!link) return std::unexpected(link.error());
        auto opened = connection.forward(*link, params.spec);
        if (!opened) return std::unexpected(std::move(opened.error()));
        return remote::to_json(*opened);
      },
      p::Execution::worker);
  table.request<UnforwardParams, json>(
      "link/unforward",
      [&connection](const UnforwardParams& params, p::CallContext&) -> std::expected<json, p::ResponseError> {
        if (auto closed = connection.unforward(params.id); !closed) return std::unexpected(std::move(closed.error()));
        return json::object();
      },
      p::Execution::worker);
  table.request<StopParams, json>(
      "ferry/stop",
      [&s](const StopParams& params, p::CallContext&) -> std::expected<json, p::ResponseError> {
        if (!s.daemon.active())
          return std::unexpected(p::ResponseError{p::error_code::kInvalidRequest,
                                                  "this is an editor's ferry serve (pid " + std::to_string(::getpid()) +
                                                      "): it ends with the editor",
                                                  {}});
        s.daemon.stop(params.why.value_or("ferry daemon stop"));
        return json{{"stopping", true}, {"pid", static_cast<long long>(::getpid())}};
      },
      p::Execution::inline_);
  table.request<SyncPushParams, p::SyncResult>(
      p::method::kSyncPush,
      [&s](const SyncPushParams& params, p::CallContext& call) { return s.sync->push(params, call, nullptr, /*ask_editor=*/false); },
      p::Execution::worker);
  table.request<p::SyncPullParams, p::SyncResult>(
      p::method::kSyncPull, [&s](const p::SyncPullParams& params, p::CallContext& call) { return s.sync->pull(params, call); },
      p::Execution::worker);
  table.request<p::SyncProjectParams, p::SyncStatusResult>(
      p::method::kSyncStatus,
      [&s](const p::SyncProjectParams& params, p::CallContext&) -> std::expected<p::SyncStatusResult, p::ResponseError> {
        return s.sync->status(params.path);
      },
      p::Execution::worker);
}

}  // namespace ferry::server
