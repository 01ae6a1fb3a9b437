// `ferry serve`: the editor-facing JSON-RPC server. A standard language server (LSP's
// lifecycle, capabilities, didSave, code lenses, commands, diagnostics) and ferry's own methods
// for richer clients, in one binding table run over a stream transport.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "protocol/binding_table.hpp"
#include "helper/server/stdio_transport.hpp"

namespace ferry::server {

struct ServerOptions {
  std::optional<std::filesystem::path> project_dir;  // --project; else the editor's workspace, else the cwd
  std::filesystem::path cwd;                         // where relative paths resolve
  std::optional<std::string> ssh_config;             // -F FILE: wins over ferry.json's sshConfig
  bool test_methods = false;                         // hidden: ferry/testSleep
  TransportOptions transport{};
};

struct ServerState;

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves until exit or EOF; returns the process exit status (see serve_stream).
  int run(int in_fd, int out_fd);
  // The daemon (daemon.hpp): serves the project's socket with no editor until idle for `idle`,
  // stopped, or `signalled`; 0 when it served (or another process serves the project), 1 when
  // it could not link, 2 without a project.
  int serve_headless(std::chrono::seconds idle, const std::function<bool()>& signalled);

  const protocol::BindingTable& table() const { return table_; }
  // SSH connections the server has made (each try counts): one per project is the promise.
  int ssh_connections_made() const;

 private:
  void bind_lifecycle();
  void bind_test_methods();

  ServerOptions options_;
  std::unique_ptr<ServerState> state_;  // before table_: handlers refer to it
  protocol::BindingTable table_;
};

}  // namespace ferry::server
