// The server's connection to the project's host: at most one live Endpoint, replaced on a
// reconnect and closed when the server ends.
#pragma once

#include <expected>
#include <memory>
#include <mutex>

#include "helper/deploy/project_config.hpp"
#include "helper/remote/endpoint.hpp"
#include "helper/server/server.hpp"
#include "protocol/cancellation.hpp"
#include "protocol/messages.hpp"

namespace ferry::server {

class HostSession {
 public:
  HostSession() = default;
  ~HostSession();
  HostSession(const HostSession&) = delete;
  HostSession& operator=(const HostSession&) = delete;

  std::expected<protocol::HostConnectResult, protocol::ResponseError> connect(
      const deploy::ProjectConfig& config, const protocol::CancellationToken& cancel);
  void close();

 private:
  std::mutex mutex_;
  std::unique_ptr<remote::Endpoint> endpoint_;
};

void bind_host_methods(protocol::BindingTable& table, const ServerOptions& options, HostSession& session);

}  // namespace ferry::server
