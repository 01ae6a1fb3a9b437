// `ferry serve`: the IDE-facing JSON-RPC server. Owns the binding table (every method the IDE
// may call, bound to engine calls) and runs it over a stream transport.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>

#include "protocol/binding_table.hpp"
#include "helper/server/stdio_transport.hpp"

namespace ferry::server {

struct ServerOptions {
  std::optional<std::filesystem::path> project_dir;  // --project; else walk up from cwd
  std::filesystem::path cwd;                         // where relative paths resolve
  bool test_methods = false;                         // hidden: ferry/testSleep
  TransportOptions transport{};
};

class HostSession;

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves until exit or EOF; returns the process exit status (see serve_stream).
  int run(int in_fd, int out_fd);

  const protocol::BindingTable& table() const { return table_; }

 private:
  void bind_lifecycle();
  void bind_project();
  void bind_test_methods();

  ServerOptions options_;
  std::unique_ptr<protocol::OutgoingRequests> client_;  // server -> client requests and notifications
  std::unique_ptr<HostSession> host_;  // before table_: handlers refer to it
  protocol::BindingTable table_;
};

}  // namespace ferry::server
