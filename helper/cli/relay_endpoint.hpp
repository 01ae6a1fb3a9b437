// An Endpoint whose agent calls go through the project's live ferry (its `agent/call` on the
// project socket) instead of a link of this process's own: `ferry runs`, `ferry kill` and
// `ferry logs` riding a daemon or the editor's server make no SSH login. Calls only: no
// notifications, tunnels or bulk lanes (what needs those links by itself).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "helper/cli/commands.hpp"
#include "helper/cli/live_server.hpp"
#include "helper/remote/endpoint.hpp"

namespace ferry::cli {

class RelayEndpoint : public remote::Endpoint {
 public:
  explicit RelayEndpoint(std::unique_ptr<LiveServer> live);

  std::expected<remote::AgentInfo, remote::ResponseError> connect(std::chrono::milliseconds timeout) override;
  std::expected<remote::json, remote::ResponseError> call(std::string_view method, remote::json params,
                                                          std::chrono::milliseconds timeout) override;
  std::expected<void, remote::ResponseError> notify(std::string_view method, remote::json params) override;
  const remote::AgentInfo& info() const override { return info_; }
  bool connected() const override { return !closed_; }
  void close() override { closed_ = true; }
  std::string description() const override;
  // The first mapping's root on the box, as the live ferry's link has it.
  std::string mapping_root() const { return live_->hello().value("mappingRoot", ""); }

 private:
  std::unique_ptr<LiveServer> live_;
  std::mutex mutex_;  // one request at a time on the socket
  remote::AgentInfo info_;
  bool closed_ = false;
};

// The relay for a command of `project` when its live ferry is of this build and linked (and no -F
// or --trust asks for a link of the command's own); nullptr otherwise.
std::unique_ptr<RelayEndpoint> relay_for(const GlobalOptions& g, const deploy::ProjectConfig& project);

}  // namespace ferry::cli
