// Everything one `ferry serve` holds, in construction order: the client connection, the
// questions to the person, the workspace, the projects' links and the services on them.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "helper/server/client_questions.hpp"
#include "helper/server/daemon.hpp"
#include "helper/server/debug_service.hpp"
#include "helper/server/host_methods.hpp"
#include "helper/server/project_lookup.hpp"
#include "helper/server/project_session.hpp"
#include "helper/server/project_socket.hpp"
#include "helper/server/run_service.hpp"
#include "helper/server/runs_left_behind.hpp"
#include "helper/server/server_context.hpp"
#include "helper/server/server_progress.hpp"
#include "helper/server/sync_service.hpp"
#include "helper/server/train_service.hpp"
#include "protocol/outgoing_requests.hpp"

namespace ferry::server {

struct ServerState {
  explicit ServerState(const ServerOptions& options);
  ~ServerState();
  // Listens on the project socket of `root`, a project this server now serves.
  void open_socket(const std::filesystem::path& root);

  const ServerOptions& options;
  DaemonState daemon;  // inactive unless this is `ferry daemon run`
  protocol::OutgoingRequests client;  // server -> client requests and notifications
  ClientQuestions questions;
  Workspace workspace;
  ServerProgress progress;  // before the links: their background work reports through it
  LeftBehindOffers left_behind;  // likewise
  ProjectSessions sessions;
  ServerContext ctx;
  std::shared_ptr<SyncService> sync;
  std::shared_ptr<RunService> runs;
  std::shared_ptr<TrainService> trains;
  std::shared_ptr<DebugSessions> debugs;

  // The project socket of each project this server serves (ServeClaims), for terminal commands
  // (socket_methods.cpp binds what each connection is served).
  std::atomic<std::uint64_t> socket_connections{0};
  std::mutex sockets_mutex;
  std::map<std::filesystem::path, std::unique_ptr<ProjectSocket>> sockets;

  std::mutex lsp_mutex;
  std::set<std::string> diagnosed;  // URIs with diagnostics published (cleared when fixed)
  // Work that waits on the client outside any request (after `initialized`); last, so it is
  // joined first (its waits end when the transport detaches the client).
  std::vector<std::jthread> background;
};

void bind_sync_methods(protocol::BindingTable& table, std::shared_ptr<SyncService> service);  // sync_methods.cpp
class SocketConnection;
void bind_socket_methods(protocol::BindingTable& table, ServerState& state, SocketConnection& connection);  // socket_methods.cpp
void bind_run_methods(protocol::BindingTable& table, std::shared_ptr<RunService> service);    // run_methods.cpp
// LSP's document, workspace and window methods (lsp_methods.cpp) and commands (lsp_commands.cpp).
void bind_lsp_methods(protocol::BindingTable& table, ServerState& state);
protocol::json lsp_capabilities();
// After `initialized`: dynamic registrations, and the offer to create a missing ferry.json.
void on_initialized(ServerState& state);
// Opens `path` in the editor without taking focus (window/showDocument); a client that cannot
// is told where it is (lsp_commands.cpp).
void show_file(ServerState& s, const std::filesystem::path& path, const std::string& what);
// workspace/executeCommand's command ids.
const std::vector<std::string>& lsp_command_ids();
std::expected<protocol::json, protocol::ResponseError> execute_command(ServerState& state, const std::string& command,
                                                                       const protocol::json& arguments,
                                                                       protocol::CallContext& call);

}  // namespace ferry::server
