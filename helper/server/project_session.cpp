// One link per project: see project_session.hpp.
#include "helper/server/project_session.hpp"

#include "helper/run/slurm_allocation.hpp"

#include <algorithm>
#include <regex>

#include "helper/cloud/notifier.hpp"
#include "helper/deploy/autostop_params.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/server/cloud_events.hpp"
#include "helper/server/host_methods.hpp"
#include "helper/server/project_tunnels.hpp"
#include "helper/sync/mapping_target.hpp"
#include "helper/train/trainer_install.hpp"
#include "protocol/link_state.hpp"

#include <spdlog/spdlog.h>

namespace ferry::server {

namespace p = ferry::protocol;

void arm_project_autostop(remote::Endpoint& endpoint, const deploy::ProjectConfig& config);
void start_project_trainer(ProjectLink& link, const deploy::ProjectConfig& config, ServerProgress& progress);
using p::json;

// What a link's endpoint reports, routed while the link lives: to the editor once, to the
// connect call still running (its progress), and to the services following runs on it.
struct LinkEvents {
  LinkEvents(ClientQuestions& q, std::filesystem::path r) : questions(q), root(std::move(r)) {}
  ClientQuestions& questions;
  const std::filesystem::path root;  // the project's, so a window of several projects can tell
  std::mutex mutex;
  ProjectSessions::Report report;  // only while the connect call runs
  std::shared_ptr<remote::NotificationFanout> states = std::make_shared<remote::NotificationFanout>();

  void on_state(const remote::HostState& s) {
    json params = remote::to_json(s);
    if (questions.traits().ferry) {
      json with_root = params;
      with_root["root"] = root.string();
      questions.client().notify(std::string(p::method::kHostStateChanged), with_root);
    } else {
      // A plain LSP client has no host/stateChanged: its log shows the link instead.
      std::string line = "ferry: " + s.host + " " + std::string(protocol::to_string(s.state)) + (s.message.empty() ? "" : ": " + s.message);
      questions.client().notify("window/logMessage", json{{"type", static_cast<int>(MessageType::info)}, {"message", line}});
    }
    {
      std::lock_guard lock(mutex);
      if (report)
        report(s.state == protocol::LinkState::reconnecting ? "reconnecting (attempt " + std::to_string(s.attempt) + ")"
                                                            : std::string(protocol::to_string(s.state)));
    }
    states->deliver(p::Notification{std::string(p::method::kHostStateChanged), std::move(params)});
  }
  void set_report(ProjectSessions::Report r) {
    std::lock_guard lock(mutex);
    report = std::move(r);
  }
};

namespace {

struct OfferedKey {
  std::string type;
  std::string fingerprint;
};

// The unknown-host error names the offered key ("... it offered TYPE key SHA256:..."); that is
// what the editor must show the person.
std::optional<OfferedKey> offered_key(const p::ResponseError& e) {
  if (!e.data || !e.data->is_object() || e.data->value("kind", "") != "hostKeyUnknown") return std::nullopt;
  static const std::regex kOffered(R"(offered (\S+) key (SHA256:[A-Za-z0-9+/]+))");
  std::smatch m;
  if (!std::regex_search(e.message, m, kOffered)) return std::nullopt;
  return OfferedKey{m[1].str(), m[2].str()};
}

// Whether two configs are served by the same link (the rest is read per use).
bool same_link(const deploy::ProjectConfig& a, const deploy::ProjectConfig& b) {
  const auto& ma = a.mappings.front();
  const auto& mb = b.mappings.front();
  return a.root == b.root && a.host == b.host && a.ssh_config == b.ssh_config && a.name == b.name &&
         ma.local == mb.local && ma.remote == mb.remote;
}

bool same_target(const sync::SyncTarget& a, const sync::SyncTarget& b) {
  return a.local_root == b.local_root && a.remote_base == b.remote_base && a.host == b.host &&
         a.remote_root == b.remote_root && a.exclude == b.exclude && a.protect == b.protect && a.nested == b.nested;
}

}  // namespace

// ---- ProjectLink ----

ProjectLink::ProjectLink(deploy::ProjectConfig config, sync::ProjectEndpoint link, remote::AgentInfo info,
                         std::shared_ptr<LinkEvents> events)
    : config_(std::move(config)), link_(std::move(link)), info_(std::move(info)), events_(std::move(events)) {}

ProjectLink::~ProjectLink() {
  if (!background_.empty()) {
    // Their calls fail at once on a closed endpoint, so the joins are short.
    for (auto& b : background_) b.request_stop();
    close();
    for (auto& b : background_) b.join();
  }
  {
    std::lock_guard lock(node_mutex_);
    node_.reset();  // it runs over the link's connection
  }
  runs_.reset();
  engines_.clear();  // they persist their state; they use the endpoint, so before it goes
  if (link_.endpoint) link_.endpoint->close();
}

std::expected<remote::JobEndpoint*, protocol::ResponseError> ProjectLink::allocation_node() {
  const auto project = config();
  auto* ssh = dynamic_cast<remote::SshEndpoint*>(link_.endpoint.get());
  if (!project.slurm || !ssh) return nullptr;
  auto job = run::running_allocation(*ssh, project);
  if (!job) return std::unexpected(job.error());
  std::lock_guard lock(node_mutex_);
  if (!*job) {
    node_.reset();
    return nullptr;
  }
  if (node_ && node_->connected() && node_->target().job_id == (*job)->job_id) return node_.get();
  node_.reset();  // another allocation's (or a dead agent): its tunnels went with it
  auto opened = run::open_allocation_endpoint(*ssh, project, **job);
  if (!opened) return std::unexpected(opened.error());
  node_ = std::move(*opened);
  return node_.get();
}

remote::JobEndpoint* ProjectLink::open_allocation_node() {
  std::lock_guard lock(node_mutex_);
  return node_ && node_->connected() ? node_.get() : nullptr;
}

deploy::ProjectConfig ProjectLink::config() const {
  std::lock_guard lock(mutex_);
  return config_;
}

sync::SyncTarget ProjectLink::target() const {
  std::lock_guard lock(mutex_);
  return link_.target;
}

std::vector<sync::SyncTarget> ProjectLink::targets() const {
  std::lock_guard lock(mutex_);
  return link_.targets;
}

void ProjectLink::refresh(const deploy::ProjectConfig& config) {
  std::lock_guard lock(mutex_);
  config_ = config;
  link_.targets = sync::mapping_targets(config);
  link_.target = link_.targets.front();
}

std::shared_ptr<sync::SyncEngine> ProjectLink::engine() { return engines().front(); }

std::vector<std::shared_ptr<sync::SyncEngine>> ProjectLink::engines() {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<sync::SyncEngine>> out;
  for (const auto& target : link_.targets) {
    auto kept = std::ranges::find_if(engines_, [&](const auto& e) { return same_target(e->target(), target); });
    if (kept != engines_.end()) {
      out.push_back(*kept);
      continue;
    }
    // New excludes, protect rules or mappings: a new engine (one still pushing keeps its own
    // until done). All of them share the link's one endpoint.
    auto engine = std::make_shared<sync::SyncEngine>(*link_.endpoint, target);
    // A live engine watches its tree: a no-op push then walks nothing (docs/sync.md).
    if (auto w = engine->watch_local_tree(); !w)
      spdlog::warn("sync: no watch of {} ({}); every push walks the tree", target.local_root.string(), w.error().message);
    out.push_back(std::move(engine));
  }
  engines_ = out;
  return out;
}

run::RunClient& ProjectLink::runs() {
  std::lock_guard lock(mutex_);
  if (!runs_) runs_ = std::make_unique<run::RunClient>(*link_.endpoint);
  return *runs_;
}

remote::Subscription ProjectLink::on_state(std::function<void(const remote::HostState&)> handler) {
  auto& states = events_->states;
  auto id = states->add([handler = std::move(handler)](const p::Notification& n) {
    handler(remote::host_state_from_json(n.params));
  });
  return remote::Subscription(states, id);
}

bool ProjectLink::usable() const {
  std::lock_guard lock(mutex_);
  return !closed_ && (link_.ssh || link_.endpoint->connected());
}

void ProjectLink::close() {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
  }
  // Only the link: services still holding it see calls fail and let go; the engine and the
  // run client go with the last holder. The agent in an allocation first: it runs over the link.
  {
    std::lock_guard lock(node_mutex_);
    node_.reset();
  }
  link_.endpoint->close();
}

void ProjectLink::start_background(std::function<void(ProjectLink&, std::stop_token)> work) {
  std::lock_guard lock(mutex_);
  if (closed_) return;
  background_.emplace_back([this, work = std::move(work)](std::stop_token stop) { work(*this, std::move(stop)); });
}

// ---- ProjectSessions ----

ProjectSessions::ProjectSessions(ClientQuestions& questions, const ServerOptions& options, ServerProgress& progress)
    : questions_(questions),
      options_(options),
      progress_(progress),
      trust_(questions),
      claims_([this](const std::filesystem::path& root) { took_over(root); },
              [this](const std::filesystem::path& root) {
                if (on_claim_) on_claim_(root);
              }) {}

// The server this one deferred to is gone: say so, and have the editor ask for lenses again.
void ProjectSessions::took_over(const std::filesystem::path& root) {
  spdlog::info("{}: the other ferry serve ended; this one serves it now", root.string());
  questions_.log(MessageType::info, "ferry: the other ferry serve on " + root.string() + " ended; this one serves it now");
  if (questions_.traits().code_lens_refresh) (void)questions_.client().call("workspace/codeLens/refresh", json(nullptr), std::chrono::seconds(10));
}

ProjectSessions::~ProjectSessions() { close_all(); }

std::shared_ptr<ProjectSessions::Slot> ProjectSessions::slot(const std::filesystem::path& root) {
  std::lock_guard lock(mutex_);
  auto& s = slots_[root];
  if (!s) s = std::make_shared<Slot>();
  return s;
}

std::expected<ProjectLinkPtr, p::ResponseError> ProjectSessions::link(const deploy::ProjectConfig& config,
                                                                      const p::CancellationToken& cancel,
                                                                      const Report& report) {
  auto s = slot(config.root);
  std::lock_guard connecting(s->connecting);
  if (auto admitted = trust_.admit(config, cancel); !admitted) {
    ProjectLinkPtr old;
    {
      std::lock_guard lock(mutex_);
      old = std::exchange(s->link, nullptr);
    }
    if (old) old->close();  // its tunnels and watchdog came from fields no longer trusted
    return std::unexpected(admitted.error());
  }
  if (auto holder = claims_.claim(config.root))
    return std::unexpected(p::ResponseError{p::error_code::kServedElsewhere,
                                            *holder + " serves " + config.root.string() + "; this ferry serve defers to it",
                                            json{{"kind", "servedElsewhere"}, {"root", config.root.string()}, {"holder", *holder}}});
  if (s->link && s->link->usable() && same_link(s->link->config(), config)) {
    s->link->refresh(config);
    return s->link;
  }
  auto fresh = connect(config, cancel, report);
  if (!fresh) return std::unexpected(fresh.error());
  ProjectLinkPtr old;
  {
    std::lock_guard lock(mutex_);
    old = std::exchange(s->link, *fresh);
  }
  if (old) old->close();
  spdlog::info("{}: linked to {}", config.name, (*fresh)->endpoint().description());
  return *fresh;
}

std::expected<ProjectLinkPtr, p::ResponseError> ProjectSessions::connect(const deploy::ProjectConfig& config,
                                                                         const p::CancellationToken& cancel,
                                                                         const Report& report) {
  auto events = std::make_shared<LinkEvents>(questions_, config.root);
  events->set_report(report);
  sync::ProjectEndpointOptions o;
  o.ssh_config = options_.ssh_config;
  o.passphrase = [this, cancel](const std::string& key) { return questions_.passphrase(key, cancel); };
  o.on_state = [events](const remote::HostState& s) { events->on_state(s); };
  auto made = sync::make_project_endpoint(config, o);
  if (!made) return std::unexpected(made.error());
  if (made->ssh) ++connections_;
  auto info = sync::connect_project_endpoint(*made);
  if (!info) {
    auto key = offered_key(info.error());
    if (!key) return std::unexpected(info.error());
    // An unknown host: the editor shows the fingerprint, as ssh would on a terminal.
    if (report) report("asking to trust " + key->fingerprint);
    auto decision = questions_.confirm_host_key(made->host, key->type, key->fingerprint, cancel);
    if (!decision && cancel.cancelled()) return std::unexpected(p::cancelled_error(p::method::kHostConnect));
    if (!decision || !*decision)
      return std::unexpected(p::ResponseError{
          p::error_code::kAgentUnavailable,
          "host key " + key->type + " " + key->fingerprint + " of " + made->host + " was not accepted; nothing recorded" +
              (decision ? "" : " (" + decision.error().message + ")"),
          json{{"kind", "hostKeyRejected"}, {"host", made->host}, {"fingerprint", key->fingerprint}}});
    // Record exactly the key the person saw: a different key offered on the retry is refused.
    o.trust_unknown = true;
    o.expect_fingerprint = key->fingerprint;
    made = sync::make_project_endpoint(config, o);
    if (!made) return std::unexpected(made.error());
    ++connections_;
    info = sync::connect_project_endpoint(*made);
    if (!info) return std::unexpected(info.error());
  }
  events->set_report({});
  if (cancel.cancelled()) {
    made->endpoint->close();
    return std::unexpected(p::cancelled_error(p::method::kHostConnect));
  }
  auto link = std::make_shared<ProjectLink>(config, std::move(*made), *info, events);
  // ferry.json's tunnels; a Slurm project's follow its allocation (project_tunnels.hpp).
  if (config.slurm && !config.tunnels.empty()) link->start_background(keep_tunnels_with_allocation);
  else (void)open_project_tunnels(link->endpoint(), config);
  // A project that uses the env mirror (it has .ferry/venv) gets it refreshed when the box's
  // packages changed since its last sync: now, and after each run ends (env_methods.cpp).
  if (std::error_code ec; std::filesystem::exists(config.root / ".ferry" / "venv", ec)) link->start_background(keep_env_mirror_fresh);
  arm_project_autostop(link->endpoint(), config);
  // A spot notice or an autostop event on the box reaches the editor while it is connected.
  link->cloud_events_ = link->endpoint().subscribe(
      [questions = &questions_, root = config.root, host = link->host()](const p::Notification& n) {
        if (n.method == "cloud/event") announce_cloud_event(*questions, root, host, n.params);
      });
  start_project_trainer(*link, config, progress_);
  if (on_connect_) on_connect_(link);
  return link;
}

// ferry.json's autostop block takes effect here: the agent's watchdog is armed with it on every
// connect (it lives on the box, so it acts with the laptop closed). enabled: false leaves an
// autostop armed by `ferry autostop` alone.
void arm_project_autostop(remote::Endpoint& endpoint, const deploy::ProjectConfig& config) {
  if (!config.autostop.enabled) return;
  if (auto refused = deploy::autostop_refusal(config.host, config.autostop, config.slurm.has_value())) {
    spdlog::warn("ferry.json autostop not armed: {}", *refused);
    return;
  }
  auto params = deploy::autostop_set_params(config.autostop);
  if (auto hook = cloud::autostop_webhook_param()) params["webhook"] = *hook;
  auto armed = endpoint.call("autostop/set", params);
  if (armed) spdlog::info("autostop armed: {} after {} idle minutes", config.autostop.action, config.autostop.idle_minutes);
  else spdlog::warn("ferry.json autostop not armed on the host: {}", armed.error().message);
}

// A project that trains with the trainer ferry builds gets it checked on every connect: when it
// is missing or stale its build starts on the box and is followed in the background as
// $/progress, while the link serves everything else; train/start later waits on the box's
// build lock. Projects without training configs probe nothing.
void start_project_trainer(ProjectLink& link, const deploy::ProjectConfig& config, ServerProgress& progress) {
  auto* ssh = dynamic_cast<remote::SshEndpoint*>(&link.endpoint());
  if (!ssh || !config.trainer.empty()) return;
  link.start_background([ssh, config, &progress](ProjectLink&, std::stop_token stop) {
    // The tree walk is here too, off the connect's path.
    bool train_launch = false;
    for (const auto& l : config.launch) train_launch = train_launch || l.kind == "train";
    if (!training::project_trains(config.root, train_launch)) return;
    training::TrainerInstallOptions o;
    o.interpreter = config.interpreter;
    o.env = config.env;
    std::unique_ptr<ServerProgress::Work> work;
    auto show = [&](const training::BuildProgressParser& b) {
      const auto& bp = b.progress();
      std::optional<int> percent = bp.total > 0 ? std::optional<int>(bp.percent()) : std::nullopt;
      if (!work) {
        work = progress.begin(nullptr);
        work->progress().begin("Building ferry-train on " + config.host, b.bar(80), percent, false);
      } else {
        work->progress().report(b.bar(80), percent);
      }
    };
    o.on_progress = show;
    auto started = training::start_trainer_build(*ssh, o);
    if (!started) {
      if (work) work->progress().end("ferry-train: " + started.error());
      spdlog::warn("{}: ferry-train: {}", config.name, started.error());
      return;
    }
    if (started->ready) {
      if (work) work->progress().end("ferry-train is ready");
      return;
    }
    spdlog::info("{}: building ferry-train on the box in the background (log: {})", config.name, started->log);
    if (!work) show(training::BuildProgressParser{});
    auto built = training::follow_trainer_build(*ssh, started->log, show, stop);
    work->progress().end(built ? "ferry-train built: " + *built : built.error());
    if (!built) spdlog::warn("{}: {}", config.name, built.error());
  });
}

ProjectLinkPtr ProjectSessions::current(const std::filesystem::path& root) const {
  std::lock_guard lock(mutex_);
  auto it = slots_.find(root);
  return it == slots_.end() ? nullptr : it->second->link;
}

std::vector<ProjectLinkPtr> ProjectSessions::all() const {
  std::lock_guard lock(mutex_);
  std::vector<ProjectLinkPtr> out;
  for (const auto& [root, s] : slots_)
    if (s->link) out.push_back(s->link);
  return out;
}

bool ProjectSessions::disconnect(const std::filesystem::path& root) {
  std::shared_ptr<Slot> s;
  {
    std::lock_guard lock(mutex_);
    auto it = slots_.find(root);
    if (it == slots_.end()) return false;
    s = it->second;
  }
  ProjectLinkPtr old;
  {
    std::lock_guard connecting(s->connecting);  // not in the middle of someone's connect
    std::lock_guard lock(mutex_);
    old = std::exchange(s->link, nullptr);
  }
  if (!old) return false;
  old->close();
  return true;
}

int ProjectSessions::connections_made() const { return connections_.load(); }

void ProjectSessions::close_all() {
  std::map<std::filesystem::path, std::shared_ptr<Slot>> slots;
  {
    std::lock_guard lock(mutex_);
    slots.swap(slots_);
  }
  for (auto& [root, s] : slots)
    if (s->link) s->link->close();
}

}  // namespace ferry::server
