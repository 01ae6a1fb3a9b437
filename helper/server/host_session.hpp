// The server's connection to the project's host: at most one live Endpoint (LocalEndpoint for
// "local", SshEndpoint otherwise), replaced on a reconnect and closed when the server ends. SSH
// links report host/stateChanged and ask the IDE about unknown host keys and key passphrases.
#pragma once

#include <expected>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "helper/deploy/project_config.hpp"
#include "helper/remote/endpoint.hpp"
#include "helper/server/server.hpp"
#include "protocol/cancellation.hpp"
#include "protocol/messages.hpp"
#include "protocol/outgoing_requests.hpp"

namespace ferry::server {

// How long the IDE gets to answer host/confirmHostKey or host/passphrase (a person is reading).
inline constexpr std::chrono::minutes kClientAnswerTimeout{5};

class HostSession {
 public:
  explicit HostSession(protocol::OutgoingRequests& client) : client_(client) {}
  ~HostSession();
  HostSession(const HostSession&) = delete;
  HostSession& operator=(const HostSession&) = delete;

  using Report = std::function<void(const std::string& message)>;
  std::expected<protocol::HostConnectResult, protocol::ResponseError> connect(const deploy::ProjectConfig& config,
                                                                              const protocol::CancellationToken& cancel,
                                                                              const Report& report = {});
  void close();

  protocol::OutgoingRequests& client() { return client_; }
  // Runs fn(remote::Endpoint*) under the session's lock (nullptr before host/connect): tunnel/*.
  template <class F>
  auto with_endpoint(F&& fn) {
    std::lock_guard lock(mutex_);
    return fn(endpoint_.get());
  }

 private:
  std::expected<protocol::HostConnectResult, protocol::ResponseError> connect_ssh(
      const deploy::ProjectConfig& config, const protocol::CancellationToken& cancel, const Report& report);
  void adopt(std::unique_ptr<remote::Endpoint> endpoint);

  protocol::OutgoingRequests& client_;
  std::mutex mutex_;
  std::unique_ptr<remote::Endpoint> endpoint_;
};

// Opens ferry.json's tunnels on a fresh endpoint (tunnel_methods.cpp); a tunnel that fails is
// logged and skipped, the connection stands.
void open_project_tunnels(remote::Endpoint& endpoint, const deploy::ProjectConfig& config);
void bind_tunnel_methods(protocol::BindingTable& table, HostSession& session);

void bind_host_methods(protocol::BindingTable& table, const ServerOptions& options, HostSession& session);
void bind_doctor_methods(protocol::BindingTable& table, const ServerOptions& options, HostSession& session);

}  // namespace ferry::server
