// One link per project for everything `ferry serve` does: sync on save, runs, debugging,
// training and tunnels of a project share one endpoint (one SSH connection, one agent), opened
// on first need, reconnected by the endpoint for all of them at once, closed on shutdown. Its
// state changes reach the editor once (host/stateChanged) and every follower that must stop and
// re-attach. Several projects (workspace folders) each get their own.
#pragma once

#include <atomic>
#include <expected>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "helper/deploy/project_config.hpp"
#include "helper/remote/endpoint.hpp"
#include "helper/run/run_client.hpp"
#include "helper/server/client_questions.hpp"
#include "helper/server/server.hpp"
#include "helper/server/server_progress.hpp"
#include "helper/server/serve_claims.hpp"
#include "helper/server/trust_gate.hpp"
#include "helper/sync/project_endpoint.hpp"
#include "helper/sync/sync_engine.hpp"
#include "protocol/binding_table.hpp"
#include "protocol/cancellation.hpp"
#include "helper/remote/job_endpoint.hpp"
#include "protocol/messages.hpp"

namespace ferry::server {

struct LinkEvents;

// A connected project, shared by the services using it (they keep it while they need it).
class ProjectLink {
 public:
  ProjectLink(deploy::ProjectConfig config, sync::ProjectEndpoint link, remote::AgentInfo info,
              std::shared_ptr<LinkEvents> events);
  ~ProjectLink();
  ProjectLink(const ProjectLink&) = delete;
  ProjectLink& operator=(const ProjectLink&) = delete;

  // The config as last loaded (env, interpreter and launch entries are read per use).
  deploy::ProjectConfig config() const;
  remote::Endpoint& endpoint() { return *link_.endpoint; }
  const remote::AgentInfo& info() const { return info_; }
  const std::string& host() const { return link_.host; }
  bool ssh() const { return link_.ssh; }
  const std::string& mapping_root() const { return link_.mapping_root; }
  sync::SyncTarget target() const;  // the first mapping's (runs, debugging, training)
  std::vector<sync::SyncTarget> targets() const;  // every mapping's, in ferry.json's order
  // The project's sync engines on this link, one per mapping in ferry.json's order, all over its
  // one endpoint (their manifests and indexes stay in memory, and each watches its local tree).
  // A push or pull runs one at a time inside each, whoever calls. engine() is the first's.
  std::vector<std::shared_ptr<sync::SyncEngine>> engines();
  std::shared_ptr<sync::SyncEngine> engine();
  // run/* on this link, shared by runs, debug sessions and the editor's followers.
  run::RunClient& runs();
  // host/stateChanged's params for each change of the link (reconnecting, connected), on the
  // endpoint's threads, until the subscription goes.
  [[nodiscard]] remote::Subscription on_state(std::function<void(const remote::HostState&)> handler);
  // A Slurm project's running allocation (`ferry alloc`): the agent in it, for the editor's
  // tunnels; opened on first use and again when the allocation changed (Slurm asked each time).
  // Null when the project has none (no slurm block, none running): tunnels go to the login node.
  std::expected<remote::JobEndpoint*, protocol::ResponseError> allocation_node();
  // The agent in the allocation opened last, if it is still connected (no Slurm asked).
  remote::JobEndpoint* open_allocation_node();
  // Connected, or an SSH link mending itself (it never gives up until closed).
  bool usable() const;
  void close();
  // Work on this link that no request waits for (the env mirror's refresh after a connect and
  // after runs, the trainer's build): it should stop when its stop token is set; the link
  // requests that, closes and joins it before it goes.
  void start_background(std::function<void(ProjectLink&, std::stop_token)> work);

 private:
  friend class ProjectSessions;
  void refresh(const deploy::ProjectConfig& config);  // same link, newer ferry.json

  mutable std::mutex mutex_;
  deploy::ProjectConfig config_;
  sync::ProjectEndpoint link_;
  remote::AgentInfo info_;
  std::shared_ptr<LinkEvents> events_;
  std::vector<std::shared_ptr<sync::SyncEngine>> engines_;
  std::unique_ptr<run::RunClient> runs_;
  bool closed_ = false;
  std::vector<std::jthread> background_;
  remote::Subscription cloud_events_;  // the agent's cloud/event, told to the editor (cloud_events.hpp)
  std::mutex node_mutex_;
  std::unique_ptr<remote::JobEndpoint> node_;  // allocation_node(); goes before the link it runs over
};

using ProjectLinkPtr = std::shared_ptr<ProjectLink>;

class ProjectSessions {
 public:
  using Report = std::function<void(const std::string& message)>;

  ProjectSessions(ClientQuestions& questions, const ServerOptions& options, ServerProgress& progress);
  ~ProjectSessions();
  ProjectSessions(const ProjectSessions&) = delete;
  ProjectSessions& operator=(const ProjectSessions&) = delete;

  // The project's link: the live one, or a new one (asking the editor about an unknown host key
  // or a key's passphrase). A ferry.json whose host or mapping changed gets a new link. Nothing
  // happens for a project that is not trusted (TrustGate: asked once); a live link whose
  // ferry.json changed into an untrusted one is closed. Nor for one another `ferry serve` serves
  // (ServeClaims: kServedElsewhere).
  std::expected<ProjectLinkPtr, protocol::ResponseError> link(const deploy::ProjectConfig& config,
                                                              const protocol::CancellationToken& cancel = {},
                                                              const Report& report = {});
  // The live link of the project rooted at `root`, without connecting (nullptr: none).
  ProjectLinkPtr current(const std::filesystem::path& root) const;
  // Closes and forgets the link of the project rooted at `root` (host/disconnect); the next use
  // makes a new one. False when there was none.
  bool disconnect(const std::filesystem::path& root);
  // Every live link (tunnel/list, shutdown).
  std::vector<ProjectLinkPtr> all() const;
  // SSH connections made so far (each try counts): what the one-link promise is measured by.
  int connections_made() const;
  void close_all();

  ClientQuestions& questions() { return questions_; }
  TrustGate& trust() { return trust_; }
  // Whether this server or another serves a project (the lenses of a deferring server are none).
  ServeClaims& claims() { return claims_; }
  // Called with each new link once it is up, before it is handed out; set before the first.
  void set_on_connect(std::function<void(const ProjectLinkPtr&)> hook) { on_connect_ = std::move(hook); }
  // Asked to make a yielding holder of a project let go (ServeClaims::Evict); set before the first.
  void set_evict(ServeClaims::Evict evict) { claims_.set_evict(std::move(evict)); }
  // Called when a project becomes this server's to serve (ServeClaims); set before the first.
  void set_on_claim(std::function<void(const std::filesystem::path& root)> hook) { on_claim_ = std::move(hook); }

 private:
  struct Slot {
    std::mutex connecting;  // one connect per project at a time; others wait for its link
    ProjectLinkPtr link;
  };
  std::expected<ProjectLinkPtr, protocol::ResponseError> connect(const deploy::ProjectConfig& config,
                                                                 const protocol::CancellationToken& cancel,
                                                                 const Report& report);
  std::shared_ptr<Slot> slot(const std::filesystem::path& root);
  void took_over(const std::filesystem::path& root);

  ClientQuestions& questions_;
  const ServerOptions& options_;
  ServerProgress& progress_;
  TrustGate trust_;
  mutable std::mutex mutex_;
  std::map<std::filesystem::path, std::shared_ptr<Slot>> slots_;
  std::atomic<int> connections_{0};
  std::function<void(const ProjectLinkPtr&)> on_connect_;
  std::function<void(const std::filesystem::path&)> on_claim_;
  ServeClaims claims_;  // last: its watcher calls back into questions_ while it runs
};

}  // namespace ferry::server
