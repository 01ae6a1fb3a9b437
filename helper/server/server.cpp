// `ferry serve`: the lifecycle (initialize answers LSP's ServerCapabilities and ferry's method
// list), and the wiring of every service to the binding table.
#include "helper/server/server.hpp"

#include <unistd.h>

#include <chrono>

#include <spdlog/spdlog.h>

#include "ferry/version.hpp"
#include "helper/server/server_state.hpp"
#include "helper/server/socket_client.hpp"
#include "helper/server/socket_connection.hpp"
#include "protocol/file_uri.hpp"
#include "protocol/messages.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
using p::CallContext;
using p::ResponseError;

namespace {

// True when the process serving `root` is a daemon and agreed to go (ferry/stop).
bool ask_daemon_to_leave(const std::filesystem::path& root) {
  auto client = SocketClient::connect(root);
  if (!client) return false;
  auto hello = client->call("ferry/hello", p::json{{"path", root.string()}}, {}, {}, std::chrono::seconds(2));
  if (!hello || !hello->value("daemon", false)) return false;
  auto stopped = client->call("ferry/stop", p::json{{"why", "an editor's ferry serve (pid " + std::to_string(::getpid()) + ") takes the project"}},
                              {}, {}, std::chrono::seconds(2));
  if (!stopped) spdlog::info("{}: the daemon (pid {}) did not stop: {}", root.string(), hello->value("pid", 0LL), stopped.error().message);
  return stopped.has_value();
}

}  // namespace

void bind_project_methods(p::BindingTable& table, const Workspace& workspace);  // project_methods.cpp

ServerState::ServerState(const ServerOptions& o)
    : options(o),
      questions(client),
      workspace(o),
      progress(client, questions),
      sessions(questions, o, progress),
      ctx{options, workspace, sessions, questions, client},
      sync(std::make_shared<SyncService>(ctx)),
      runs(std::make_shared<RunService>(ctx, &progress)),
      trains(make_train_service(ctx)),
      debugs(make_debug_sessions(ctx)) {
  sessions.set_on_claim([this](const std::filesystem::path& root) { open_socket(root); });
  // An editor's server takes a project from a daemon (daemon.hpp); a daemon takes nothing.
  sessions.set_evict([this](const std::filesystem::path& root) { return !daemon.active() && ask_daemon_to_leave(root); });
  // Each connect names the runs a killed ferry left going on the box (runs_left_behind.hpp): they
  // are listed before the connect returns (one round trip; the link is then idle), and asked about
  // in the background.
  sessions.set_on_connect([this](const ProjectLinkPtr& link) {
    auto runs = link->runs().list(false, /*running=*/true);
    if (!runs) {
      spdlog::info("{}: run/list after connecting: {}", link->host(), runs.error().message);
      return;
    }
    auto left = runs_left_behind(*runs);
    if (left.empty()) return;
    link->start_background([this, left = std::move(left)](ProjectLink& l, std::stop_token stop) {
      offer_runs_left_behind(*this, l, left_behind, left, stop);
    });
  });
}

// The sockets' connections and the links' background work use the services: they end before
// the services go.
ServerState::~ServerState() {
  {
    std::lock_guard lock(sockets_mutex);
    sockets.clear();
  }
  sessions.close_all();
}

void ServerState::open_socket(const std::filesystem::path& root) {
  auto path = project_socket_path(root);
  auto socket = path ? ProjectSocket::listen(*path, [this](int fd) {
    daemon.connection_began();
    {
      SocketConnection connection(++socket_connections, fd);
      p::BindingTable table;
      bind_socket_methods(table, *this, connection);
      TransportOptions t;
      t.lsp_lifecycle = false;
      t.workers = 4;  // a riding run's input, signal and list may wait on the link at once
      t.output = &connection.output();
      (void)serve_stream(table, fd, fd, t);
    }  // what the command left on the link ends before the daemon counts it gone
    daemon.connection_ended();
  })
                     : std::unexpected(path.error());
  if (!socket) {
    spdlog::info("{}: no project socket for terminal commands: {}", root.string(), socket.error());
    return;
  }
  spdlog::info("{}: terminal commands ride this server at {}", root.string(), (*socket)->path().string());
  std::lock_guard lock(sockets_mutex);
  sockets[root] = std::move(*socket);
}

Server::Server(ServerOptions options) : options_(std::move(options)), state_(std::make_unique<ServerState>(options_)) {
  auto& s = *state_;
  bind_lifecycle();
  bind_project_methods(table_, s.workspace);
  bind_debug_methods(table_, s.debugs);
  bind_host_methods(table_, s.ctx);
  bind_doctor_methods(table_, s.ctx);
  bind_env_methods(table_, [&s](const std::optional<std::string>& path, p::CallContext& call) {
    return s.ctx.link(path, call.cancellation());
  });
  bind_cost_methods(table_, s.ctx);
  bind_gpu_methods(table_, s.ctx);
  bind_tunnel_methods(table_, s.ctx);
  bind_sync_methods(table_, s.sync);
  bind_train_methods(table_, s.trains);
  bind_run_methods(table_, s.runs);
  bind_lsp_methods(table_, s);
  if (options_.test_methods) bind_test_methods();
}

Server::~Server() = default;

int Server::ssh_connections_made() const { return state_->sessions.connections_made(); }

int Server::run(int in_fd, int out_fd) {
  TransportOptions transport = options_.transport;
  transport.outgoing = &state_->client;
  int code = serve_stream(table_, in_fd, out_fd, transport);
  state_->sessions.close_all();  // the agents go when the editor does
  return code;
}

namespace {

// The folders the editor opened: workspaceFolders, else rootUri, else rootPath.
std::vector<std::filesystem::path> workspace_folders(const p::InitializeParams& params) {
  std::vector<std::filesystem::path> folders;
  if (params.workspace_folders.is_array())
    for (const auto& f : params.workspace_folders)
      if (f.is_object() && f.contains("uri") && f["uri"].is_string())
        if (auto path = p::file_uri_to_fs_path(f["uri"].get<std::string>())) folders.emplace_back(*path);
  if (folders.empty() && params.root_uri)
    if (auto path = p::file_uri_to_fs_path(*params.root_uri)) folders.emplace_back(*path);
  if (folders.empty() && params.root_path && !params.root_path->empty()) folders.emplace_back(*params.root_path);
  return folders;
}

}  // namespace

void Server::bind_lifecycle() {
  // Handled inside the dispatcher, listed here so capabilities name them.
  table_.reserve_name(p::method::kExit);
  table_.reserve_name(p::method::kCancelRequest);

  table_.request<p::InitializeParams, p::InitializeResult>(
      p::method::kInitialize, [this](const p::InitializeParams& params, CallContext&) {
        auto& s = *state_;
        ClientTraits traits = client_traits(p::json{{"capabilities", params.capabilities},
                                                    {"clientInfo", params.client_info ? p::json{{"name", params.client_info->name}} : p::json()}});
        spdlog::info("initialize from {} {} ({})", params.client_info ? params.client_info->name : "a client",
                     params.client_info ? params.client_info->version.value_or("") : "",
                     traits.ferry ? "ferry's methods" : "plain LSP");
        s.questions.set_traits(traits);
        s.workspace.set_folders(workspace_folders(params));
        p::InitializeResult r;
        r.server_info.version = ferry::kVersion;
        r.capabilities = lsp_capabilities();
        r.methods = table_.method_names();
        return std::expected<p::InitializeResult, ResponseError>(std::move(r));
      });
  table_.notification<p::EmptyParams>(p::method::kInitialized, [this](const p::EmptyParams&, CallContext&) {
    spdlog::debug("client initialized");
    on_initialized(*state_);
  });
  table_.request<p::EmptyParams, p::NullResult>(p::method::kShutdown, [](const p::EmptyParams&, CallContext&) {
    spdlog::info("shutdown requested");
    return std::expected<p::NullResult, ResponseError>(p::NullResult{});
  });
  table_.notification<p::SetTraceParams>(p::method::kSetTrace, [](const p::SetTraceParams& params, CallContext&) {
    spdlog::debug("trace set to {}", params.value);
  });
  // A trivial round trip for health checks and the RPC benchmark.
  table_.request<p::PingParams, p::PingResult>(p::method::kPing, [](const p::PingParams& params, CallContext&) {
    return std::expected<p::PingResult, ResponseError>(p::PingResult{params.payload});
  });
}

void Server::bind_test_methods() {
  // Sleeps on a worker in `steps` slices, reporting progress, and stops at once when
  // cancelled: the transcript tests of cancellation and $/progress drive it.
  table_.request<p::TestSleepParams, p::TestSleepResult>(
      p::method::kTestSleep,
      [](const p::TestSleepParams& params, CallContext& ctx) -> std::expected<p::TestSleepResult, ResponseError> {
        auto progress = ctx.progress();
        progress.begin("Sleeping", std::to_string(params.ms) + " ms", 0);
        auto slice = std::chrono::milliseconds(params.ms) / params.steps;
        for (int i = 1; i <= params.steps; ++i) {
          if (ctx.cancellation().wait_for(slice)) return std::unexpected(p::cancelled_error(ctx.method()));
          progress.report("step " + std::to_string(i) + " of " + std::to_string(params.steps),
                          i * 100 / params.steps);
        }
        progress.end("done");
        return p::TestSleepResult{params.ms};
      },
      p::Execution::worker);
}

}  // namespace ferry::server
