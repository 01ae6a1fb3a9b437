// SshEndpoint: see ssh_endpoint.hpp. The link (connect, agent start, keepalive, reconnects), calls,
// bulk lanes and forwards; the agent's install is in ssh_agent_install.cpp and ferry doctor's
// checks in ssh_doctor.cpp.
#include "helper/remote/ssh_endpoint.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include <spdlog/spdlog.h>

#include "ferry/version.hpp"
#include "helper/remote/agent_builds.hpp"
#include "helper/remote/mux_tunnel.hpp"
#include "helper/remote/openssh_lane.hpp"
#include "helper/remote/round_trip_memory.hpp"
#include "helper/remote/ssh_endpoint_internal.hpp"
#include "protocol/messages_agent.hpp"
#include "protocol/shell_words.hpp"

namespace ferry::remote {
namespace {

namespace ec = protocol::error_code;
using protocol::shell_quote;
using namespace std::chrono_literals;

constexpr std::chrono::milliseconds kDefaultKeepalive{4'000};
// Lanes by default on a long link: kAutoBulkLanes up to a 50 ms round trip, then one more per
// 6.25 ms up to 16 (from 100 ms), since each lane carries at most its 2 MiB window per round trip
// (16 lanes pushed 256 MiB 1.3x faster than 8 at 150 ms; at 50 ms 4, 8 or 16 were the same).
constexpr std::size_t kMaxAutoBulkLanes = 16;
constexpr std::chrono::microseconds kRttPerAutoBulkLane{6'250};
constexpr std::string_view kInstallMarker = "FERRY-INSTALL-NEEDED";

// "~/x" -> "$HOME"/'x' so the remote shell expands the home directory and nothing else.
std::string remote_path_expr(std::string_view path) { return protocol::shell_quote_home(path); }

std::string error_kind(const ssh::Error& e) {
  using ssh::Errc;
  if (e.code == make_error_code(Errc::kHostKeyUnknown)) return "hostKeyUnknown";
  if (e.code == make_error_code(Errc::kHostKeyChanged)) return "hostKeyChanged";
  if (e.code == make_error_code(Errc::kHostKeyRevoked)) return "hostKeyRevoked";
  if (e.code == make_error_code(Errc::kAuthFailed)) return "authFailed";
  if (e.code == make_error_code(Errc::kTimeout)) return "timeout";
  if (e.code == make_error_code(Errc::kConnectFailed)) return "connectFailed";
  if (e.code == make_error_code(Errc::kLinkDead)) return "linkDead";
  if (e.code == make_error_code(Errc::kUnsupported)) return "unsupported";
  return "ssh";
}

using detail::unavailable;

// How long an agent whose death sshd reported (exit signal, non-zero status) may stay quiet before
// its stream counts as ended: what it wrote before dying still arrives meanwhile, and the link's
// promise (docs/ssh.md: every call fails within 2 s of the death) holds with a round trip to spare.
constexpr std::chrono::milliseconds kAgentExitGrace{800};

// The agent's exec channel as the ByteStream AgentLink reads; it reports a broken link upward.
class SshByteStream final : public ByteStream {
 public:
  SshByteStream(std::unique_ptr<ssh::SshStream> stream, std::function<void(const std::string&)> on_broken)
      : stream_(std::move(stream)), on_broken_(std::move(on_broken)) {
    // A process the agent started may hold its stdout: sshd then sends no EOF when it dies.
    stream_->end_after_exit(kAgentExitGrace);
  }

  ReadResult read_some(std::span<char> buffer, std::optional<Clock::time_point> deadline) override {
    auto r = stream_->read_some(buffer, deadline);
    if (r) {
      if (*r > 0) {
        // The first bytes are kept: the launch command may say "install me" instead of starting.
        if (recorded_.size() < kRecordLimit)
          recorded_.append(buffer.data(), std::min(*r, kRecordLimit - recorded_.size()));
        return ReadResult{ReadStatus::data, *r, {}};
      }
      on_broken_("the agent's channel reached EOF");
      // A writer blocked on a full window would otherwise wait out its whole deadline for a reader
      // that is gone (the agent died mid-request).
      stream_->interrupt();
      return ReadResult{ReadStatus::eof, 0, {}};
    }
    if (r.error().code == make_error_code(ssh::Errc::kTimeout)) return ReadResult{ReadStatus::timeout, 0, {}};
    if (r.error().code == make_error_code(ssh::Errc::kInterrupted)) return ReadResult{ReadStatus::interrupted, 0, {}};
    on_broken_(r.error().message);
    stream_->interrupt();
    return ReadResult{ReadStatus::error, 0, r.error().message};
  }

  std::expected<void, std::string> write_all(std::string_view bytes) override {
    auto r = stream_->write_all(bytes, Clock::now() + 60s);
    if (!r) {
      on_broken_(r.error().message);
      return std::unexpected(r.error().message);
    }
    return {};
  }

  void close_write() override { stream_->close_write(); }
  void interrupt() override { stream_->interrupt(); }
  const std::string& recorded() const { return recorded_; }

 private:
  static constexpr std::size_t kRecordLimit = 64 << 10;
  std::string recorded_;
  std::unique_ptr<ssh::SshStream> stream_;
  std::function<void(const std::string&)> on_broken_;
};

}  // namespace

// A job link's stream (open_job_link), which the link's Link severs before its connection goes:
// every call after that fails at once, as on a dead link, instead of touching the connection.
class SeverableStream final : public ByteStream {
 public:
  explicit SeverableStream(std::unique_ptr<ByteStream> inner) : inner_(std::move(inner)) {}

  ReadResult read_some(std::span<char> buffer, std::optional<Clock::time_point> deadline) override {
    if (!enter()) return ReadResult{ReadStatus::error, 0, "the login link went"};
    Leave leave{*this};
    return inner_->read_some(buffer, deadline);
  }
  std::expected<void, std::string> write_all(std::string_view bytes) override {
    if (!enter()) return std::unexpected("the login link went");
    Leave leave{*this};
    return inner_->write_all(bytes);
  }
  void close_write() override {
    if (!enter()) return;
    Leave leave{*this};
    inner_->close_write();
  }
  void interrupt() override {
    if (!enter()) return;
    Leave leave{*this};
    inner_->interrupt();
  }
  // Wakes what is blocked, waits for every call in progress, then closes the channel (its
  // connection still lives: this runs in the Link's destructor, before its members go).
  void sever() {
    std::unique_lock lk(mutex_);
    if (severed_) return;
    severed_ = true;
    if (inner_) inner_->interrupt();
    cv_.wait(lk, [&] { return in_flight_ == 0; });
    inner_.reset();
  }

 private:
  struct Leave {
    SeverableStream& s;
    ~Leave() {
      std::lock_guard lk(s.mutex_);
      if (--s.in_flight_ == 0) s.cv_.notify_all();
    }
  };
  bool enter() {
    std::lock_guard lk(mutex_);
    if (severed_ || !inner_) return false;
    ++in_flight_;
    return true;
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  bool severed_ = false;
  int in_flight_ = 0;
  std::unique_ptr<ByteStream> inner_;
};

namespace {

// What AgentLink owns of a job link: the stream the Link also holds (weakly) to sever it.
class SharedStream final : public ByteStream {
 public:
  explicit SharedStream(std::shared_ptr<SeverableStream> s) : s_(std::move(s)) {}
  ReadResult read_some(std::span<char> b, std::optional<Clock::time_point> d) override { return s_->read_some(b, d); }
  std::expected<void, std::string> write_all(std::string_view bytes) override { return s_->write_all(bytes); }
  void close_write() override { s_->close_write(); }
  void interrupt() override { s_->interrupt(); }

 private:
  std::shared_ptr<SeverableStream> s_;
};

}  // namespace

json to_json(const HostState& s) {
  json j{{"state", protocol::to_string(s.state)}, {"host", s.host}};
  if (s.attempt) j["attempt"] = s.attempt;
  if (s.retry_in_ms) j["retryInMs"] = s.retry_in_ms;
  if (!s.message.empty()) j["message"] = s.message;
  return j;
}

HostState host_state_from_json(const json& params) {
  HostState s;
  if (!params.is_object()) return s;
  auto text = [&params](const char* key) {
    auto it = params.find(key);
    return it != params.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto number = [&params](const char* key) {
    auto it = params.find(key);
    return it != params.end() && it->is_number_integer() ? it->get<long long>() : 0LL;
  };
  s.state = protocol::link_state_from_string(text("state"));
  s.host = text("host");
  s.attempt = static_cast<int>(number("attempt"));
  s.retry_in_ms = number("retryInMs");
  s.message = text("message");
  return s;
}

bool is_idempotent_method(std::string_view method) {
  auto slash = method.find('/');
  std::string_view verb = slash == std::string_view::npos ? method : method.substr(slash + 1);
  for (std::string_view safe : {"hello", "ping", "stat", "list", "read", "status", "info", "get", "signature", "hash",
                                "probe", "check", "manifest"})
    if (verb.starts_with(safe)) return true;
  return false;
}

SshEndpoint::SshEndpoint(SshEndpointOptions options) : options_(std::move(options)) {
  if (!options_.idempotent) options_.idempotent = is_idempotent_method;
}

SshEndpoint::~SshEndpoint() { close(); }

std::string SshEndpoint::description() const {
  if (host_.hostname.empty()) return "ssh " + options_.host;
  return "ssh " + ssh::describe(host_) + (host_.alias != host_.hostname ? " (" + host_.alias + ")" : "");
}

void SshEndpoint::emit(HostState state) {
  state.host = options_.host;
  if (options_.on_state) options_.on_state(state);
  else spdlog::info("{}: {} {}", options_.host, protocol::to_string(state.state), state.message);
}

// The bulk lanes of one link: agents on channels of their own, opened by threads of their own
// while the transfer that asked for them already runs on the main agent. They are spread over
// extra SSH connections to the same host (lane i on connection i % K): each connection has its
// own sshd process on the box and its own io thread here, so the encryption and decryption of a
// push spread over cores instead of all going through one sshd and one session thread. With no
// extra connections (K = 0), or when one does not open, its lanes are channels of the link's own.
struct SshEndpoint::Lanes {
  std::mutex mutex;
  std::condition_variable changed;  // a lane came up or failed
  // Declared before `agents`, so each connection outlives the channels on it.
  std::vector<std::unique_ptr<ssh::SshConnection>> connections;  // by slot; null if it did not open
  std::vector<std::unique_ptr<AgentLink>> agents;                 // by lane; null while opening, or if it failed
  std::vector<bool> settled;                                      // by lane: up, or given up on
  std::atomic<bool> stopping{false};
  std::vector<std::thread> openers;  // one per connection slot (per lane through OpenSSH)
  bool openssh = false;
  std::unique_ptr<LaneKnownHosts> known_hosts;  // OpenSSH lanes: the link's host key, and only it
  ~Lanes() {
    stopping = true;
    for (auto& t : openers)
      if (t.joinable()) t.join();
    for (auto& a : agents)  // EOF to every lane's agent at once: they (and ssh children) end in parallel
      if (a) a->close_write();
    for (auto& a : agents)
      if (a) a->stop();
    agents.clear();
  }
  void settle(std::size_t lane, std::unique_ptr<AgentLink> agent) {
    std::lock_guard lk(mutex);
    agents[lane] = std::move(agent);
    settled[lane] = true;
    changed.notify_all();
  }
};

// Lane connections opened ahead of the link (expect_bulk), one thread each; lanes take them in
// bulk_lanes() once they show the link's host key, and open their own when none is left.
struct SshEndpoint::EarlyConnections {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::unique_ptr<ssh::SshConnection>> ready;
  std::size_t opening = 0;
  std::vector<std::thread> openers;
  ~EarlyConnections() {
    for (auto& t : openers)
      if (t.joinable()) t.join();
  }
  void opened(std::unique_ptr<ssh::SshConnection> c) {
    std::lock_guard lk(mutex);
    if (c) ready.push_back(std::move(c));
    --opening;
    changed.notify_all();
  }
  // One that presents `fingerprint` (the key the link verified), waiting for those still opening;
  // null when none does.
  std::unique_ptr<ssh::SshConnection> take(const std::string& fingerprint, const std::string& host) {
    for (;;) {
      std::unique_ptr<ssh::SshConnection> c;
      {
        std::unique_lock lk(mutex);
        changed.wait(lk, [&] { return !ready.empty() || opening == 0; });
        if (ready.empty()) return nullptr;
        c = std::move(ready.back());
        ready.pop_back();
      }
      if (c->host_key().fingerprint == fingerprint) return c;
      spdlog::warn("{}: a lane connection presented host key {}, not the link's {}; not used", host, c->host_key().fingerprint,
                   fingerprint);
    }
  }
};

// A host's key in the round-trip memory: the name asked for and where it led (a jump changes both).
static std::string round_trip_key(const ssh::HostConfig& host) {
  std::string key = host.alias + " " + ssh::describe(host);
  for (const auto& hop : host.proxy_jump) key += " via " + ssh::describe(hop);
  return key;
}

std::filesystem::path SshEndpoint::round_trip_file() const {
  return options_.round_trip_memory.empty() ? default_round_trip_memory() : options_.round_trip_memory;
}

void SshEndpoint::expect_bulk() {
  std::lock_guard lk(early_mutex_);
  bulk_expected_ = true;
  start_early_connections();
}

// Once both the hint and this connect's host are in: a host remembered as far gets the lane
// connections its plan would open, now. Nothing on a near or unknown host, nor when the lanes
// are asked to go over the link's own connection or through OpenSSH.
void SshEndpoint::start_early_connections() {
  if (!bulk_expected_ || early_taken_ || early_ || !early_host_) return;
  const auto rtt = remembered_round_trip(round_trip_file(), round_trip_key(*early_host_));
  if (!rtt || *rtt < kBulkLaneMinRtt || requested_openssh_lanes().value_or(0) > 0) return;
  const LanePlan plan = plan_lanes(*rtt, asked_bulk_lanes(), std::nullopt, 0);
  const std::size_t k = plan.openssh ? 0 : wanted_lane_connections(plan.lanes);
  if (k == 0) return;
  spdlog::debug("{}: round trip remembered as {:.1f} ms: {} lane connections open beside the link's", options_.host,
                rtt->count() / 1000.0, k);
  early_ = std::make_shared<EarlyConnections>();
  early_->opening = k;
  for (std::size_t slot = 0; slot < k; ++slot)
    early_->openers.emplace_back([this, raw = early_.get(), host = *early_host_, so = options_.session, ka = keepalive_for(*early_host_),
                                  slot] { raw->opened(open_lane_connection(host, so, "", ka, slot)); });
}

// What was opened early, for the link's first lanes; after this call nothing more opens early.
std::shared_ptr<SshEndpoint::EarlyConnections> SshEndpoint::take_early_connections() {
  std::lock_guard lk(early_mutex_);
  early_taken_ = true;
  return std::move(early_);
}

SshEndpoint::Link::~Link() {
  std::shared_ptr<Lanes> held;
  std::vector<std::weak_ptr<SeverableStream>> jobs;
  {
    std::lock_guard lk(lanes_mutex);
    held = std::move(lanes);
    jobs = std::move(job_links);
  }
  for (auto& j : jobs)
    if (auto live = j.lock()) live->sever();
  held.reset();  // joins the openers while `connection` still lives
}

// Window-bound (a long link): libssh2 lanes by round trip. CPU-bound (a short one): lanes through
// the OpenSSH client (kAutoOpenSshLanes unless asked otherwise).
LanePlan plan_lanes(Clock::duration rtt, std::optional<std::size_t> bulk_asked, std::optional<std::size_t> openssh_asked,
                    std::size_t openssh_lanes) {
  if (bulk_asked) return {*bulk_asked, false};
  if (openssh_asked.value_or(0) > 0 || rtt < kBulkLaneMinRtt) return {openssh_lanes, true};
  const auto by_rtt = static_cast<std::size_t>(rtt / kRttPerAutoBulkLane);
  return {std::clamp<std::size_t>(by_rtt, kAutoBulkLanes, kMaxAutoBulkLanes), false};
}

std::optional<std::size_t> SshEndpoint::asked_bulk_lanes() const {
  if (options_.bulk_lanes >= 0) return static_cast<std::size_t>(options_.bulk_lanes);
  if (const char* v = std::getenv("FERRY_BULK_LANES"); v && *v) return std::strtoul(v, nullptr, 10);
  return std::nullopt;
}

SshEndpoint::LanePlan SshEndpoint::lane_plan(const Link& link, Clock::duration rtt) const {
  const std::optional<std::size_t> bulk = asked_bulk_lanes();
  if (!bulk && !link.connection) return {};
  return plan_lanes(rtt, bulk, requested_openssh_lanes(), bulk ? 0 : wanted_openssh_lanes());
}

// The session's round trip is one channel open's so far; on a busy machine a loopback open took
// 11 ms once, and 8 window lanes on 4 connections then tripled a 1 GiB push on 2 cores. A round
// trip that close to the line is checked against two agent pings (the smallest wins).
SshEndpoint::LanePlan SshEndpoint::planned_lanes(Link& link) {
  if (link.plan) return *link.plan;
  Clock::duration rtt = link.connection ? link.connection->rtt() : Clock::duration::zero();
  if (rtt >= kBulkLaneMinRtt && rtt < 3 * kBulkLaneMinRtt && link.agent) {
    for (int i = 0; i < 2; ++i) {
      const auto t0 = Clock::now();
      if (!link.agent->call(protocol::method::kAgentPing, json::object(), 5s)) break;
      rtt = std::min<Clock::duration>(rtt, Clock::now() - t0);
    }
  }
  const LanePlan plan = lane_plan(link, rtt);
  spdlog::debug("{}: round trip {:.1f} ms: {} bulk lanes{}", options_.host, std::chrono::duration<double, std::milli>(rtt).count(),
                plan.lanes, plan.openssh ? " through OpenSSH" : "");
  link.plan = plan;
  if (link.connection && rtt > Clock::duration::zero())
    remember_round_trip(round_trip_file(), round_trip_key(host_), std::chrono::duration_cast<std::chrono::microseconds>(rtt));
  return plan;
}

std::optional<std::size_t> SshEndpoint::requested_openssh_lanes() const {
  if (options_.openssh_lanes >= 0) return static_cast<std::size_t>(options_.openssh_lanes);
  if (const char* v = std::getenv("FERRY_OPENSSH_LANES"); v && *v) return std::strtoul(v, nullptr, 10);
  return std::nullopt;
}

std::size_t SshEndpoint::wanted_openssh_lanes() const {
  const std::size_t n = requested_openssh_lanes().value_or(kAutoOpenSshLanes);
  if (n == 0 || !openssh_lane_unsupported(host_).empty() || !find_openssh_client()) return 0;
  return std::min<std::size_t>(n, kMaxAutoBulkLanes);
}

std::size_t SshEndpoint::wanted_lane_connections(std::size_t lanes) const {
  std::size_t k = kAutoBulkConnections;
  if (options_.bulk_connections >= 0) k = static_cast<std::size_t>(options_.bulk_connections);
  else if (const char* v = std::getenv("FERRY_BULK_CONNECTIONS"); v && *v) k = std::strtoul(v, nullptr, 10);
  return std::min(k, lanes);
}

SshEndpoint::Keepalive SshEndpoint::keepalive() const { return keepalive_for(host_); }

SshEndpoint::Keepalive SshEndpoint::keepalive_for(const ssh::HostConfig& host) const {
  auto interval = options_.keepalive_interval.count() > 0 ? options_.keepalive_interval
                  : host.server_alive_interval_s > 0    ? std::chrono::milliseconds(host.server_alive_interval_s * 1000)
                                                        : kDefaultKeepalive;
  return {interval, options_.keepalive_count_max > 0 ? options_.keepalive_count_max : host.server_alive_count_max};
}

// One extra connection for lanes: the same host config, known_hosts check and authentication as
// the link's, and it must present the link's host key (`fingerprint`; empty for one opened ahead
// of the link, which EarlyConnections::take checks instead). It never prompts (no passphrase provider:
// an encrypted key without an ssh-agent leaves the lanes on the link's own connection) and never
// records a host key.
std::unique_ptr<ssh::SshConnection> SshEndpoint::open_lane_connection(const ssh::HostConfig& host, ssh::SessionOptions so,
                                                                      const std::string& fingerprint, Keepalive keepalive,
                                                                      std::size_t slot) const {
  so.passphrase = nullptr;
  so.trust_unknown = false;
  so.expect_fingerprint.reset();
  so.host_key_only = false;
  so.connect_timeout = std::min<std::chrono::milliseconds>(so.connect_timeout, 15s);
  auto conn = std::make_unique<ssh::SshConnection>();
  if (auto r = conn->connect(host, so); !r) {
    spdlog::debug("{}: lane connection {} did not open: {}; its lanes use the link's", options_.host, slot, r.error().message);
    return nullptr;
  }
  if (!fingerprint.empty() && conn->host_key().fingerprint != fingerprint) {
    spdlog::warn("{}: lane connection {} presented host key {}, not the link's {}; not used", options_.host, slot,
                 conn->host_key().fingerprint, fingerprint);
    return nullptr;
  }
  // A hung lane connection is closed like a hung link; its lanes' calls then fail and go main.
  conn->start_keepalive(keepalive.interval, keepalive.count_max, [](const ssh::Error&) {});
  return conn;
}

std::size_t SshEndpoint::bulk_lanes() {
  auto link = current();
  if (!link || !link->connection || link->launch.empty()) return 0;
  std::lock_guard lk(link->lanes_mutex);
  if (link->lanes) return link->lanes->agents.size();
  const LanePlan plan = planned_lanes(*link);
  const std::size_t n = plan.lanes;
  if (n == 0) return 0;
  auto lanes = std::make_shared<Lanes>();
  lanes->agents.resize(n);
  lanes->settled.resize(n, false);
  if (plan.openssh) {
    start_openssh_lanes(*lanes, *link);
    link->lanes = std::move(lanes);
    return n;
  }
  const std::size_t k = wanted_lane_connections(n), slots = std::max<std::size_t>(k, 1);
  spdlog::debug("{}: {} bulk lanes on {} connections", options_.host, n, k);
  lanes->connections.resize(k);
  auto early = take_early_connections();
  for (std::size_t slot = 0; slot < slots; ++slot)
    lanes->openers.emplace_back([this, raw = lanes.get(), main = link->connection.get(), launch = link->launch, host = host_,
                                 so = options_.session, fingerprint = link->connection->host_key().fingerprint,
                                 ka = keepalive(), slot, slots, extra = k > 0, n, early] {
      ssh::SshConnection* conn = main;
      if (extra && !raw->stopping) {
        auto own = early ? early->take(fingerprint, options_.host) : nullptr;
        if (own) ++early_used_;
        else own = open_lane_connection(host, so, fingerprint, ka, slot);
        if (own) {
          conn = own.get();
          std::lock_guard lk(raw->mutex);
          raw->connections[slot] = std::move(own);
        }
      }
      bool failing = false;
      for (std::size_t i = slot; i < n; i += slots) {
        if (failing || raw->stopping) {
          raw->settle(i, nullptr);
          continue;
        }
        auto agent = open_lane_agent(*conn, launch, i);
        failing = !agent;  // the connection itself is failing: the main agent carries the rest
        raw->settle(i, std::move(agent));
      }
    });
  link->lanes = std::move(lanes);
  return n;
}

bool SshEndpoint::lanes_save_cpu() {
  auto link = current();
  if (!link || !link->connection || link->launch.empty()) return false;
  std::lock_guard lk(link->lanes_mutex);
  const LanePlan plan = planned_lanes(*link);
  return plan.openssh && plan.lanes > 0;
}

// How an `ssh` child of this link (a lane, the tunnel master) reaches the host: the link's host
// config, ssh-agent and keepalive, and the known_hosts file holding the key the link verified.
OpenSshLaneSpec SshEndpoint::openssh_spec(const std::filesystem::path& client, const std::filesystem::path& known_hosts) const {
  OpenSshLaneSpec spec{client, host_, known_hosts, options_.session.agent_socket};
  const auto ka = keepalive();
  spec.alive_interval_s = std::max<int>(1, static_cast<int>(std::chrono::ceil<std::chrono::seconds>(ka.interval).count()));
  spec.alive_count_max = std::max(1, ka.count_max);
  return spec;
}

// One thread per lane, each an `ssh` child that starts the link's agent command; they check the
// host key the link checked (written to a private known_hosts) and authenticate as the link did.
void SshEndpoint::start_openssh_lanes(Lanes& lanes, const Link& link) const {
  lanes.openssh = true;
  const ssh::HostKeyInfo key = link.connection->host_key();
  lanes.known_hosts = LaneKnownHosts::create(key.key);
  auto client = find_openssh_client();
  if (!lanes.known_hosts || !client) {
    for (std::size_t i = 0; i < lanes.agents.size(); ++i) lanes.settle(i, nullptr);
    return;
  }
  const OpenSshLaneSpec spec = openssh_spec(*client, lanes.known_hosts->file());
  for (std::size_t i = 0; i < lanes.agents.size(); ++i)
    lanes.openers.emplace_back([raw = &lanes, spec, type = key.key.type, launch = link.launch, i, host = options_.host] {
      if (raw->stopping) return raw->settle(i, nullptr);
      auto agent = open_openssh_lane(spec, type, launch, Clock::now() + 15s);
      spdlog::debug("{}: OpenSSH lane {} {}", host, i, agent ? "up" : "did not open; its chunks use the link");
      raw->settle(i, std::move(agent));
    });
}

std::unique_ptr<AgentLink> SshEndpoint::open_lane_agent(ssh::SshConnection& conn, const std::string& launch, std::size_t lane) const {
  auto stream = conn.open_stream(launch, 15s);
  if (!stream) {
    spdlog::debug("{}: bulk lane {} did not open: {}", options_.host, lane, stream.error().message);
    return nullptr;
  }
  // A lane's failure is not the link's: its calls fail and the caller uses the main agent.
  auto agent = std::make_unique<AgentLink>(std::make_unique<SshByteStream>(std::move(*stream), [](const std::string&) {}));
  if (auto info = agent->handshake(Clock::now() + 15s); !info) {
    spdlog::debug("{}: bulk lane {} did not answer: {}", options_.host, lane, info.error().message);
    agent->stop();
    return nullptr;
  }
  return agent;
}

std::shared_ptr<SshEndpoint::Lanes> SshEndpoint::current_lanes() const {
  auto link = current();
  if (!link) return nullptr;
  std::lock_guard lk(link->lanes_mutex);
  return link->lanes;
}

std::size_t SshEndpoint::live_lanes() const {
  auto lanes = current_lanes();
  if (!lanes) return 0;
  std::lock_guard lk(lanes->mutex);
  return static_cast<std::size_t>(std::count_if(lanes->agents.begin(), lanes->agents.end(), [](const auto& a) { return a && a->alive(); }));
}

std::size_t SshEndpoint::live_lane_connections() const {
  auto lanes = current_lanes();
  if (!lanes) return 0;
  std::lock_guard lk(lanes->mutex);
  // A connection whose sshd died may still read as open until its keepalive fails: what counts is
  // that a lane on it still answers.
  std::size_t live = 0;
  const std::size_t k = lanes->connections.size();
  for (std::size_t slot = 0; slot < k; ++slot) {
    bool used = false;
    for (std::size_t i = slot; i < lanes->agents.size() && !used; i += k)
      used = lanes->agents[i] && lanes->agents[i]->alive();
    live += lanes->connections[slot] && lanes->connections[slot]->is_open() && used;
  }
  return live;
}

std::expected<json, ResponseError> SshEndpoint::call_lane(std::size_t lane, std::string_view method, json params,
                                                          std::chrono::milliseconds timeout) {
  auto link = current();  // keeps the lane alive during the call
  std::shared_ptr<Lanes> lanes;
  if (link) {
    std::lock_guard lk(link->lanes_mutex);
    lanes = link->lanes;
  }
  AgentLink* agent = nullptr;
  if (lanes) {
    // A lane still opening is waited for (a connection's handshake and each lane's exec and hello
    // take a few round trips): its chunk would otherwise pile onto the main agent's one window.
    std::unique_lock lk(lanes->mutex);
    lanes->changed.wait_for(lk, std::min<std::chrono::milliseconds>(timeout, 30s),
                            [&] { return lane >= lanes->agents.size() || lanes->settled[lane]; });
    if (lane < lanes->agents.size()) agent = lanes->agents[lane].get();
  }
  if (!agent || !agent->alive())
    return std::unexpected(unavailable(std::string(method) + ": bulk lane " + std::to_string(lane) + " is not up"));
  auto r = agent->call(method, std::move(params), timeout);
  if (r) ++lane_calls_;
  return r;
}

std::shared_ptr<SshEndpoint::Link> SshEndpoint::current() const {
  std::lock_guard lk(mutex_);
  return link_;
}

bool SshEndpoint::connected() const {
  std::lock_guard lk(mutex_);
  return link_ && !broken_ && link_->agent->alive();
}

AgentInstallReport SshEndpoint::install_report() const {
  std::lock_guard lk(mutex_);
  return install_;
}

ssh::HostKeyInfo SshEndpoint::host_key() const {
  std::lock_guard lk(mutex_);
  return host_key_;
}


// One exec starts the installed agent when this build's is there; otherwise it creates the
// directory and says so (with $HOME, the absolute dir and `uname -sm`), and ferry installs the
// box's arch's build, then starts again. A warm connect thus costs one remote shell, not two. The
// build is in the file's name (arch and sha256, checked once when it was installed, before the
// rename that gave it that name), so the warm path forks only uname: hashing 5 MB on every
// connect cost ~10 ms. An arch this ferry has no build for falls through to the install step,
// which names what is missing. --installed: the agent makes its dir and agent.log owner-only (the
// shell made the log under the login's umask); a new dir is made 0700 by a umask of its own.
std::string SshEndpoint::launch_command(const std::string& dir_display) const {
  std::string launch = "D=" + remote_path_expr(dir_display) + "; case \"$(uname -sm)\" in";
  for (const auto& [arch, agent] : agents_)
    launch += " 'Linux " + arch + "'" + (arch == "aarch64" ? "|'Linux arm64'" : "") + ") F=\"$D/" + agent_file_name(arch) + "\";;";
  launch += " *) F=;; esac; if [ -n \"$F\" ] && [ -x \"$F\" ]; then exec \"$F\" --installed --root " +
            remote_path_expr(options_.remote_root);
  for (const auto& a : options_.agent_args) launch += " " + shell_quote(a);
  // Agent logs stay on the box next to the binary.
  launch += " 2>>\"$D/agent.log\"; fi; (umask 077 && mkdir -p \"$D\") && echo " + std::string(kInstallMarker) +
            " && printf '%s\\n' \"$HOME\" \"$(cd \"$D\" && pwd)\" \"$(uname -sm)\"";
  return launch;
}

std::expected<std::shared_ptr<SshEndpoint::Link>, ResponseError> SshEndpoint::establish(Clock::time_point deadline) {
  if (auto l = load_local_agents(); !l) return std::unexpected(l.error());
  auto conn = std::make_unique<ssh::SshConnection>();
  ssh::SessionOptions so = options_.session;
  auto left = [&] { return std::max<std::chrono::milliseconds>(1ms, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())); };
  so.connect_timeout = std::min(so.connect_timeout, left());
  auto r = conn->connect(host_, so);
  if (!r) {
    json data{{"kind", error_kind(r.error())}, {"host", options_.host}};
    return std::unexpected(unavailable(r.error().message, data));
  }
  {
    std::lock_guard lk(mutex_);
    host_key_ = conn->host_key();
  }
  std::string dir = options_.agent_dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::string dir_display = dir + "/" + kVersion;
  std::string launch = launch_command(dir_display);
  AgentInstallReport report{dir_display + "/ferry-agent-<arch>-<hash>", "", false, ""};
  for (int round = 0;; ++round) {
    auto stream = conn->open_stream(launch, left());
    if (!stream) return std::unexpected(unavailable("starting ferry-agent on " + description() + ": " + stream.error().message));
    auto link = std::make_shared<Link>();
    Link* raw = link.get();
    auto byte_stream = std::make_unique<SshByteStream>(std::move(*stream), [this, raw](const std::string& why) {
      std::lock_guard lk(mutex_);
      if (link_.get() == raw && !broken_) {
        broken_ = true;
        broken_reason_ = why;
        cv_.notify_all();
      }
    });
    SshByteStream* recorder = byte_stream.get();
    link->agent = std::make_unique<AgentLink>(std::move(byte_stream));
    link->agent->set_notification_handler(fanout_handler());
    spdlog::debug("{}: agent starting", options_.host);
    auto info = link->agent->handshake(deadline);
    spdlog::debug("{}: agent {}", options_.host, info ? "ready" : "did not answer hello");
    if (info) {
      info_ = *info;
      if (!report.installed) {  // found installed: the agent's hello says which arch's build it is
        const std::string arch = agent_arch_of("Linux " + info->arch).value_or(info->arch);
        report.remote_path = dir_display + "/" + agent_file_name(arch);
        if (auto it = agents_.find(arch); it != agents_.end()) report.sha256 = it->second.hash;
      }
      {
        std::lock_guard lk(mutex_);
        install_ = report;
      }
      const auto ka = keepalive();
      conn->start_keepalive(ka.interval, ka.count_max, [this, raw](const ssh::Error& e) {
        std::lock_guard lk(mutex_);
        if (link_.get() == raw && !broken_) {
          broken_ = true;
          broken_reason_ = e.message;
          cv_.notify_all();
        }
      });
      link->connection = std::move(conn);
      link->launch = launch;
      return link;
    }
    std::string said = recorder->recorded();
    link->agent->stop();
    auto at = said.find(std::string(kInstallMarker) + "\n");
    if (at != std::string::npos && round == 0) {
      std::istringstream lines(said.substr(at + kInstallMarker.size() + 1));
      std::string home, abs_dir, uname_sm;
      std::getline(lines, home);
      std::getline(lines, abs_dir);
      std::getline(lines, uname_sm);
      if (abs_dir.empty() || abs_dir[0] != '/')
        return std::unexpected(unavailable("preparing " + dir_display + " on " + description() + " failed"));
      auto arch = agent_arch_of(uname_sm);
      if (!arch) return std::unexpected(unavailable(unsupported_box_message(description(), uname_sm), json{{"kind", "unsupportedBox"}}));
      auto installed = install_agent(*conn, abs_dir, *arch, deadline);
      if (!installed) return std::unexpected(installed.error());
      report = AgentInstallReport{*installed, home, true, agents_.at(*arch).hash};
      launch = launch_command(dir_display);  // the build may have been hashed anew
      continue;
    }
    auto err = info.error();
    // The agent's stderr went to agent.log on the box: its last lines usually say why (a glibc
    // older than the build needs, a root it cannot create).
    if (auto tail = conn->exec("tail -c 600 " + remote_path_expr(dir_display + "/agent.log") + " 2>/dev/null", 5s);
        tail && !tail->out.empty()) {
      // ferry's own agents are static: this is a dynamically linked build from $FERRY_AGENT*.
      if (tail->out.find("GLIBC_") != std::string::npos)
        err.message += "; the box's glibc is older than this (dynamically linked) ferry-agent build needs (see docs/ssh.md)";
      std::string said = tail->out;
      if (auto nl = said.find('\n'); said.size() >= 600 && nl != std::string::npos) said.erase(0, nl + 1);  // from a line start
      err.message += "; agent.log ends with: " + said;
    }
    return std::unexpected(err);
  }
}

std::expected<std::unique_ptr<AgentLink>, ResponseError> SshEndpoint::open_job_link(const json& request, Clock::time_point deadline,
                                                                                     NotificationHandler on_notification, AgentInfo& info) {
  auto link = current();
  if (!link || !link->connection) return std::unexpected(unavailable("not connected to " + description()));
  // The build this link runs, found or installed by connect(); its agent.log takes srun's words.
  const std::string agent = install_report().remote_path;
  const std::string command = "F=" + remote_path_expr(agent) + "; exec \"$F\" --job-link 2>>\"${F%/*}/agent.log\"";
  auto left = std::max<std::chrono::milliseconds>(1ms, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  auto stream = link->connection->open_stream(command, left);
  if (!stream) return std::unexpected(unavailable("starting ferry-agent --job-link on " + description() + ": " + stream.error().message));
  auto bytes = std::make_shared<SeverableStream>(std::make_unique<SshByteStream>(std::move(*stream), [](const std::string&) {}));
  if (auto w = bytes->write_all(request.dump() + "\n"); !w)
    return std::unexpected(unavailable("starting ferry-agent --job-link on " + description() + ": " + w.error()));
  {
    std::lock_guard lk(link->lanes_mutex);
    std::erase_if(link->job_links, [](const auto& w) { return w.expired(); });
    link->job_links.push_back(bytes);
  }
  auto agent_link = std::make_unique<AgentLink>(std::make_unique<SharedStream>(std::move(bytes)));
  agent_link->set_notification_handler(std::move(on_notification));
  auto hello = agent_link->handshake(deadline);
  if (!hello) return std::unexpected(hello.error());
  info = *hello;
  return agent_link;
}

std::expected<AgentInfo, ResponseError> SshEndpoint::connect(std::chrono::milliseconds timeout) {
  close();
  {
    std::lock_guard lk(mutex_);
    closing_ = false;
    broken_ = false;
  }
  auto resolved = ssh::resolve_host(options_.host, options_.ssh_config);
  if (!resolved) return std::unexpected(ResponseError{ec::kProjectInvalid, resolved.error().to_string(), json{{"kind", "sshConfig"}}});
  host_ = *resolved;
  {
    std::lock_guard lk(early_mutex_);
    early_taken_ = false;
    early_host_ = host_;
    start_early_connections();
  }
  emit(HostState{protocol::LinkState::connecting, {}, 0, 0, description()});
  auto link = establish(Clock::now() + timeout);
  if (!link) {
    emit(HostState{protocol::LinkState::disconnected, {}, 0, 0, link.error().message});
    return std::unexpected(link.error());
  }
  {
    std::lock_guard lk(mutex_);
    link_ = *link;
    if (!link_->agent->alive()) broken_ = true;
  }
  restore_forwards(*link);
  emit(HostState{protocol::LinkState::connected, {}, 0, 0, description()});
  if (options_.reconnect) monitor_ = std::thread([this] { monitor_loop(); });
  return info_;
}

void SshEndpoint::monitor_loop() {
  std::unique_lock lk(mutex_);
  for (;;) {
    cv_.wait(lk, [&] { return closing_ || broken_; });
    if (closing_) return;
    std::string why = broken_reason_;
    auto dead = std::move(link_);
    lk.unlock();
    if (dead) {
      spdlog::debug("{}: link down ({}); releasing it", options_.host, why);
      dead->agent->stop();
      dead.reset();
      spdlog::debug("{}: old link released", options_.host);
    }
    auto backoff = options_.backoff_initial;
    int attempt = 0;
    emit(HostState{protocol::LinkState::reconnecting, {}, 0, 0, why});
    lk.lock();
    while (!closing_) {
      ++attempt;
      lk.unlock();
      auto link = establish(Clock::now() + options_.session.connect_timeout + 15s);
      lk.lock();
      if (closing_) {
        lk.unlock();
        if (link) (*link)->agent->stop();
        link = std::unexpected(ResponseError{});
        lk.lock();
        return;
      }
      if (link) {
        link_ = *link;
        broken_ = !link_->agent->alive();
        cv_.notify_all();
        lk.unlock();
        // Tunnels first, so whoever waits for the reconnect finds them forwarding again.
        restore_forwards(*link);
        ++reconnects_;
        emit(HostState{protocol::LinkState::connected, {}, 0, 0, description()});
        lk.lock();
        break;
      }
      auto message = link.error().message;
      lk.unlock();
      emit(HostState{protocol::LinkState::reconnecting, {}, attempt, static_cast<long long>(backoff.count()), message});
      lk.lock();
      broken_reason_ = message;
      cv_.wait_for(lk, backoff, [&] { return closing_; });
      backoff = std::min(backoff * 2, options_.backoff_max);
    }
  }
}

std::expected<json, ResponseError> SshEndpoint::call(std::string_view method, json params, std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    std::shared_ptr<Link> link;
    {
      std::unique_lock lk(mutex_);
      if (closing_ || (!link_ && !broken_)) return std::unexpected(unavailable(std::string(method) + ": not connected to " + description()));
      if (broken_ || !link_) {
        if (!options_.reconnect) return std::unexpected(unavailable(std::string(method) + ": the link to " + description() + " is down: " + broken_reason_));
        bool up = cv_.wait_until(lk, deadline, [&] { return closing_ || (link_ && !broken_); });
        if (closing_) return std::unexpected(unavailable(std::string(method) + ": the endpoint was closed"));
        if (!up)
          return std::unexpected(ResponseError{ec::kRequestCancelled, std::string(method) + ": " + description() +
                                                                          " is unreachable, still reconnecting (" + broken_reason_ + ")", {}});
      }
      link = link_;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return std::unexpected(ResponseError{ec::kRequestCancelled, std::string(method) + ": timed out", {}});
    // Kept for a retry only where one may follow: a push's 8 MiB chunks are moved, not copied.
    const bool may_retry = options_.reconnect && options_.idempotent(method);
    auto r = link->agent->call(method, may_retry ? json(params) : std::move(params), left);
    if (r || r.error().code != ec::kAgentUnavailable) return r;
    {
      std::lock_guard lk(mutex_);
      if (link_ == link && !broken_) {
        broken_ = true;
        broken_reason_ = r.error().message;
        cv_.notify_all();
      }
    }
    if (!may_retry)
      return std::unexpected(unavailable(std::string(method) + ": the connection to " + description() +
                                         " dropped while the request was in flight; not retried because it may already have taken effect (" +
                                         r.error().message + ")"));
    spdlog::info("{}: link dropped in flight; retrying after reconnect", method);
  }
}

std::expected<void, ResponseError> SshEndpoint::notify(std::string_view method, json params) {
  auto link = current();
  if (!link) return std::unexpected(unavailable(std::string(method) + ": not connected to " + description()));
  return link->agent->notify(method, std::move(params));
}

std::expected<ssh::ExecResult, ResponseError> SshEndpoint::exec(const std::string& command, std::chrono::milliseconds timeout,
                                                                std::string input) {
  auto link = current();
  if (!link) return std::unexpected(unavailable("not connected to " + description()));
  auto r = link->connection->exec(command, timeout, std::move(input));
  if (!r) return std::unexpected(unavailable("running a command on " + description() + ": " + r.error().message));
  return *r;
}

std::expected<std::unique_ptr<ssh::SshStream>, ResponseError> SshEndpoint::open_stream(const std::string& command,
                                                                                      std::chrono::milliseconds timeout) {
  auto link = current();
  if (!link) return std::unexpected(unavailable("not connected to " + description()));
  auto r = link->connection->open_stream(command, timeout);
  if (!r) return std::unexpected(unavailable("running a command on " + description() + ": " + r.error().message));
  return std::move(*r);
}

std::shared_ptr<TunnelMaster> SshEndpoint::tunnel_master(Link& link) {
  std::lock_guard lk(link.lanes_mutex);
  if (link.tunnel_master) return *link.tunnel_master;
  link.tunnel_master = nullptr;
  int asked = options_.openssh_tunnels;
  if (const char* v = std::getenv("FERRY_OPENSSH_TUNNELS"); asked < 0 && v && *v) asked = std::atoi(v);
  if (asked == 0 || !link.connection) return nullptr;
  if (asked < 0 && link.connection->rtt() >= kBulkLaneMinRtt) return nullptr;  // the window is the cap: libssh2's follows the link
  auto client = find_openssh_client();
  if (!client || !openssh_lane_unsupported(host_).empty()) return nullptr;
  const ssh::HostKeyInfo key = link.connection->host_key();
  auto dir = LaneKnownHosts::create(key.key);
  if (!dir) return nullptr;
  link.tunnel_master = std::make_shared<TunnelMaster>(openssh_spec(*client, dir->file()), key.key.type, std::move(dir));
  return *link.tunnel_master;
}

bool SshEndpoint::wait_openssh_tunnels(std::chrono::milliseconds timeout) {
  auto link = current();
  if (!link) return false;
  auto master = tunnel_master(*link);
  return master && master->wait_up(Clock::now() + timeout);
}

std::uint64_t SshEndpoint::tunnel_connections_through_openssh() const {
  std::lock_guard lk(forwards_mutex_);
  std::uint64_t n = 0;
  for (const auto& [id, f] : forwards_)
    if (f.active.counters) n += f.active.counters->handed_off.load();
  return n;
}

bool SshEndpoint::start_forward(Forward& f, const std::shared_ptr<Link>& link) {
  auto& spec = f.info.spec;
  ssh::Result<ssh::ForwardHandle> r = std::unexpected(ssh::Error{});
  if (spec.kind == ForwardKind::kLocal) {
    std::shared_ptr<ssh::ConnectionHandoff> handoff;
    if (auto master = tunnel_master(*link)) handoff = std::make_shared<MuxTunnel>(master, spec.remote_host, spec.remote_port, options_.openssh_tunnel_after_bytes);
    r = link->connection->start_local_forward(f.listener.fd(), spec.remote_host, spec.remote_port, {}, std::move(handoff));
  } else {
    // The host binds its loopback whatever the spelling here (GatewayPorts stays the server's call).
    int port = f.info.bound_port ? f.info.bound_port : spec.remote_port;
    r = link->connection->start_remote_forward("127.0.0.1", port, spec.local_host, spec.local_port, 15s);
  }
  if (!r) {
    f.info.error = r.error().message;
    f.info.state = protocol::ForwardState::waiting;
    f.active = {};
    return false;
  }
  if (spec.kind == ForwardKind::kReverse) f.info.bound_port = r->bound_port;
  f.active = *r;
  f.link = link;
  f.info.state = protocol::ForwardState::active;
  f.info.error.clear();
  return true;
}

void SshEndpoint::restore_forwards(const std::shared_ptr<Link>& link) {
  std::lock_guard lk(forwards_mutex_);
  for (auto& [id, f] : forwards_) {
    if (!start_forward(f, link))
      spdlog::warn("{}: tunnel {} not restored: {}", options_.host, describe(f.info), f.info.error);
  }
}

std::expected<ForwardInfo, ResponseError> SshEndpoint::open_forward(const ForwardSpec& spec) {
  if (auto ok = validate_forward_spec(spec); !ok) return std::unexpected(ResponseError{ec::kInvalidParams, ok.error(), {}});
  auto link = current();
  if (!link) return std::unexpected(unavailable("opening a tunnel: not connected to " + description()));
  Forward f;
  f.info.spec = spec;
  if (spec.kind == ForwardKind::kLocal) {
    auto l = LoopbackListener::open(spec.bind_address, spec.local_port);
    if (!l) return std::unexpected(ResponseError{ec::kIoError, l.error(), {}});
    f.listener = std::move(*l);
    f.info.bound_port = f.listener.port();
  }
  std::lock_guard lk(forwards_mutex_);
  if (!start_forward(f, link)) {
    if (spec.kind == ForwardKind::kReverse)
      return std::unexpected(ResponseError{ec::kIoError, "opening " + describe(f.info) + ": " + f.info.error, {}});
    // A local tunnel keeps its listener and starts with the next link.
    spdlog::warn("{}: tunnel {} waits for the link: {}", options_.host, describe(f.info), f.info.error);
  }
  f.info.id = next_forward_id_++;
  auto info = f.info;
  forwards_.emplace(info.id, std::move(f));
  return info;
}

std::expected<void, ResponseError> SshEndpoint::close_forward(int id) {
  Forward f;
  {
    std::lock_guard lk(forwards_mutex_);
    auto it = forwards_.find(id);
    if (it == forwards_.end()) return std::unexpected(ResponseError{ec::kInvalidParams, "no tunnel with id " + std::to_string(id), {}});
    f = std::move(it->second);
    forwards_.erase(it);
    if (auto link = f.link.lock(); link && link->connection) link->connection->stop_forward(f.active);
  }
  f.listener.close();
  return {};
}

std::vector<ForwardInfo> SshEndpoint::list_forwards() const {
  std::lock_guard lk(forwards_mutex_);
  std::vector<ForwardInfo> out;
  for (const auto& [id, f] : forwards_) {
    ForwardInfo info = f.info;
    bool live_link = !f.link.expired() && !f.active.forward.expired();
    if (info.state == protocol::ForwardState::active && !live_link) info.state = protocol::ForwardState::waiting;
    if (f.active.counters) {
      info.accepted = f.active.counters->accepted.load();
      info.live = f.active.counters->live.load();
    }
    out.push_back(std::move(info));
  }
  return out;
}

void SshEndpoint::close() {
  {
    // Listeners go first, so nothing queues on a tunnel that will not come back.
    std::lock_guard lk(forwards_mutex_);
    for (auto& [id, f] : forwards_) {
      if (auto link = f.link.lock(); link && link->connection) link->connection->stop_forward(f.active);
      f.listener.close();
    }
    forwards_.clear();
  }
  std::shared_ptr<Link> link;
  {
    std::lock_guard lk(mutex_);
    closing_ = true;
    link = std::move(link_);
    cv_.notify_all();
  }
  if (monitor_.joinable()) monitor_.join();
  std::shared_ptr<EarlyConnections> early;
  {
    // A hint that came before this connect (the walk beside it) stays for it; a link's end ends it.
    std::lock_guard lk(early_mutex_);
    early = std::move(early_);
    early_host_.reset();
    if (link) bulk_expected_ = false;
  }
  early.reset();  // joins any still opening
  if (!link) return;
  // EOF, not agent/shutdown and a wait for its answer: every request was answered, and at EOF
  // the agent ends the same way (a round trip less at every close: 50 ms at 50 ms).
  link->agent->close_write();
  link->agent->stop();
  link.reset();
  emit(HostState{protocol::LinkState::disconnected, {}, 0, 0, "closed"});
}

}  // namespace ferry::remote
