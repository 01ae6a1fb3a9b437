// An Endpoint whose agent calls go through the project's live ferry (its `agent/call` on the
// project socket) instead of a link of this process's own: `ferry run`, `attach`, `logs`, `runs`,
// `kill` and `gpu` riding a daemon or the editor's server make no SSH login. The run streams this
// command attaches come back as the socket's notifications (the live ferry tags them as this
// connection's), tunnels open on the live ferry's link for as long as this command is connected
// (link/forward), and its link's state changes arrive as on_state. No bulk lanes.
#pragma once

#include <expected>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "helper/cli/commands.hpp"
#include "helper/cli/live_server.hpp"
#include "helper/remote/endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/sync/sync_engine.hpp"

namespace ferry::cli {

class RelayEndpoint : public remote::Endpoint {
 public:
  explicit RelayEndpoint(std::unique_ptr<LiveServer> live);
  ~RelayEndpoint() override;

  std::expected<remote::AgentInfo, remote::ResponseError> connect(std::chrono::milliseconds timeout) override;
  std::expected<remote::json, remote::ResponseError> call(std::string_view method, remote::json params,
                                                          std::chrono::milliseconds timeout) override;
  std::expected<void, remote::ResponseError> notify(std::string_view method, remote::json params) override;
  const remote::AgentInfo& info() const override { return info_; }
  bool connected() const override;
  void close() override;
  std::string description() const override;
  // The live ferry's link mends itself (an SSH link reconnects): a follower waits for it; not
  // once the live ferry itself is gone.
  bool reconnects() const override;
  std::expected<remote::ForwardInfo, remote::ResponseError> open_forward(const remote::ForwardSpec& spec) override;
  std::expected<void, remote::ResponseError> close_forward(int id) override;
  std::vector<remote::ForwardInfo> list_forwards() const override;

  // The live ferry's link went down or came back (on the socket's reader thread).
  void on_state(std::function<void(const remote::HostState&)> handler);
  // The live ferry went away (killed, stopped): what waits on this endpoint should stop (on the
  // socket's reader thread; at once when it is gone already).
  void on_closed(std::function<void(const std::string& why)> handler);
  long long pid() const { return live_->pid(); }
  LiveServer& live() { return *live_; }
  // The live ferry's push of the project rooted at `root` (owned deletes only; its warm index),
  // as a run or a debug session does before it starts.
  std::expected<sync::SyncSummary, ferry::Error> push_project(const std::filesystem::path& root);
  // The first mapping's root on the box, as the live ferry's link has it.
  std::string mapping_root() const { return live_->hello().value("mappingRoot", ""); }

 private:
  std::unique_ptr<LiveServer> live_;
  remote::AgentInfo info_;
  mutable std::mutex mutex_;
  bool closed_ = false;
  bool link_up_ = true;  // the live ferry's link, as its link/state says (it was up at hello)
  std::map<int, remote::ForwardInfo> forwards_;
  std::function<void(const remote::HostState&)> state_handler_;
};

// The project's live ferry when it is of this build and linked, the project is trusted, and no -F
// or --trust asks for a link of the command's own; nullptr otherwise.
std::unique_ptr<LiveServer> live_for(const GlobalOptions& g, const deploy::ProjectConfig& project);
// The relay for a command of `project` over live_for's ferry; nullptr where that is none.
std::unique_ptr<RelayEndpoint> relay_for(const GlobalOptions& g, const deploy::ProjectConfig& project);

// For a command that only calls the agent (gpu, autostop, spot): the relay, else a connected
// link of its own; the exit status when that fails (said on stderr, `who` first).
std::expected<std::unique_ptr<remote::Endpoint>, int> agent_endpoint(const GlobalOptions& g, const deploy::ProjectConfig& project,
                                                                    const std::string& who);

}  // namespace ferry::cli
