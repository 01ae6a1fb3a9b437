// RunClient: typed run/* calls and notification routing.
#include "helper/run/run_client.hpp"

#include <algorithm>
#include <deque>
#include <set>

#include <spdlog/spdlog.h>

namespace ferry::run {

namespace ec = protocol::error_code;

struct RunClient::Router {
  std::mutex mutex;
  std::multimap<std::string, RunWatcher*> watchers;
  remote::NotificationHandler others;
  // start() calls with `attach` in flight, and the runs they started that nobody claimed yet: run/*
  // notifications of an id nobody watches are held meanwhile (the reply and the first record race
  // to the caller). Bounded: past kMaxHeld the oldest go, and the follower re-attaches at the gap.
  int starting = 0;
  std::set<std::string> unclaimed;
  std::deque<protocol::Notification> held;
  static constexpr std::size_t kMaxHeld = 4096;

  // Under the mutex: keeps `note` when it is for a run not claimed yet (even one already watched:
  // what was held goes first), or for an unwatched id while a start is in flight.
  bool hold_locked(const std::string& id, const protocol::Notification& note) {
    if (!unclaimed.contains(id) && (starting == 0 || watchers.contains(id))) return false;
    if (held.size() == kMaxHeld) held.pop_front();
    held.push_back(note);
    return true;
  }

  // One run/* notification to the watchers of `id`, or to `only`; under the mutex, so unwatch()
  // can promise no later calls. A malformed one is logged and dropped.
  void deliver_locked(const protocol::Notification& note, const std::string& id, RunWatcher* only = nullptr) {
    auto [b, e] = watchers.equal_range(id);
    auto each = [&](auto&& call) {
      if (only) return call(*only);
      for (auto it = b; it != e; ++it) call(*it->second);
    };
    if (note.method == "run/output") {
      auto rec = parse_output_record(note.params);
      if (!rec) return spdlog::warn("ignoring a malformed run/output: {}", rec.error());
      each([&](RunWatcher& w) { w.on_output(*rec); });
    } else if (note.method == "run/exited") {
      auto exit = parse_run_exit(note.params);
      if (!exit) return spdlog::warn("ignoring a malformed run/exited: {}", exit.error());
      each([&](RunWatcher& w) { w.on_exited(*exit); });
    } else if (auto port = parse_port_event(note.params)) {
      each([&](RunWatcher& w) { w.on_port(*port); });
    }
  }

  // A stream with a `follower` is a riding terminal's (the project socket relays it): not ours.
  void dispatch(const protocol::Notification& note) {
    if (note.method.starts_with("run/") && note.params.is_object() && note.params.contains("follower")) return;
    if (note.method != "run/output" && note.method != "run/exited" && note.method != "run/port") {
      if (others) others(note);
      return;
    }
    if (!note.params.is_object()) return;
    const std::string id = note.params.value("id", "");
    std::lock_guard lock(mutex);
    if (!hold_locked(id, note)) deliver_locked(note, id);
  }
};

std::optional<PortEvent> parse_port_event(const json& p) {
  if (!p.is_object() || !p.contains("id") || !p["id"].is_string() || !p.contains("port") || !p["port"].is_number_integer())
    return std::nullopt;
  PortEvent e{p["id"].get<std::string>(), p["port"].get<int>(), p.value("address", "127.0.0.1"), p.value("open", true)};
  if (e.port < 1 || e.port > 65535) return std::nullopt;
  return e;
}

namespace {

std::expected<std::string, std::string> string_field(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::unexpected(std::string("missing \"") + key + "\"");
  return it->get<std::string>();
}

ResponseError bad_reply(std::string_view method, const std::string& why) {
  return ResponseError{ec::kAgentUnavailable, std::string(method) + ": unexpected reply from the agent: " + why, {}};
}

}  // namespace

std::expected<RunInfo, std::string> parse_run_info(const json& entry) {
  if (!entry.is_object()) return std::unexpected("expected an object");
  RunInfo r;
  auto id = string_field(entry, "id");
  if (!id) return std::unexpected(id.error());
  r.id = *id;
  if (auto a = entry.find("argv"); a != entry.end() && a->is_array())
    for (const auto& w : *a)
      if (w.is_string()) r.argv.push_back(w.get<std::string>());
  r.cwd = entry.value("cwd", "");
  r.root = entry.value("root", "");
  r.state = entry.value("state", "");
  if (auto p = entry.find("pid"); p != entry.end() && p->is_number_integer()) r.pid = p->get<long long>();
  r.started_at = entry.value("startedAt", "");
  r.ended_at = entry.value("endedAt", "");
  if (auto c = entry.find("exitCode"); c != entry.end() && c->is_number_integer()) r.exit_code = c->get<int>();
  if (auto s = entry.find("signal"); s != entry.end() && s->is_number_integer()) r.signal = s->get<int>();
  if (auto b = entry.find("logBytes"); b != entry.end() && b->is_number_unsigned()) r.log_bytes = b->get<std::uint64_t>();
  r.group = entry.value("group", "");
  r.label = entry.value("label", "");
  r.slurm_job = entry.value("slurmJob", "");
  if (auto st = entry.find("slurmState"); st != entry.end()) r.slurm_state = protocol::slurm_job_state_from_json(*st);
  if (auto f = entry.find("followed"); f != entry.end() && f->is_boolean()) r.followed = f->get<bool>();
  return r;
}

bool is_unknown_run(const ResponseError& error) { return error.code == ec::kInvalidParams; }

RunClient::RunClient(remote::Endpoint& endpoint, remote::NotificationHandler others)
    : endpoint_(endpoint), router_(std::make_shared<Router>()) {
  router_->others = std::move(others);
  // The handler holds the router, not this: a notification already being delivered when the
  // client goes finds an empty watcher table instead of a dangling pointer.
  subscription_ = endpoint_.subscribe([router = router_](const protocol::Notification& n) { router->dispatch(n); });
}

RunClient::~RunClient() {
  subscription_.reset();
  std::lock_guard lock(router_->mutex);
  router_->watchers.clear();
}

std::expected<StartedRun, ResponseError> RunClient::start(const RunSpec& spec, std::optional<bool> attach) {
  json params = spec.to_json();
  if (attach) {
    params["attach"] = *attach ? json{{"ports", true}} : json::object();
    std::lock_guard lock(router_->mutex);
    ++router_->starting;
  }
  auto r = endpoint_.call("run/start", std::move(params));
  // From here on only the new id's notifications are held, until claim(); others' go.
  auto stop_holding = [&](const std::string& id) {
    if (!attach) return;
    std::lock_guard lock(router_->mutex);
    if (!id.empty()) router_->unclaimed.insert(id);
    if (--router_->starting == 0)
      std::erase_if(router_->held, [&](const protocol::Notification& n) {
        return !router_->unclaimed.contains(n.params.value("id", ""));
      });
  };
  if (!r) {
    stop_holding("");
    return std::unexpected(r.error());
  }
  StartedRun s;
  auto id = string_field(*r, "id");
  auto attached = r->find("attached");
  const bool streaming = attach && id && attached != r->end() && attached->is_object();
  stop_holding(streaming ? *id : "");
  if (!id) return std::unexpected(bad_reply("run/start", id.error()));
  s.id = *id;
  if (auto p = r->find("pid"); p != r->end() && p->is_number_integer()) s.pid = p->get<long long>();
  s.started_at = r->value("startedAt", "");
  if (streaming) s.attached = AttachReply{s.id, attached->value("offset", std::uint64_t{0}), attached->value("state", "")};
  return s;
}

void RunClient::claim(const std::string& id, RunWatcher* watcher) {
  std::lock_guard lock(router_->mutex);
  router_->unclaimed.erase(id);
  // In the order read, before anything read later (which waits for this mutex).
  std::erase_if(router_->held, [&](const protocol::Notification& n) {
    if (n.params.value("id", "") != id) return false;
    if (watcher) router_->deliver_locked(n, id, watcher);
    return true;
  });
}

std::expected<AttachReply, ResponseError> RunClient::attach(const std::string& id, std::uint64_t offset, bool ports) {
  json params{{"id", id}, {"offset", offset}};
  if (ports) params["ports"] = true;
  auto r = endpoint_.call("run/attach", std::move(params));
  if (!r) return std::unexpected(r.error());
  AttachReply a;
  a.id = r->value("id", id);
  if (auto o = r->find("offset"); o != r->end() && o->is_number_unsigned()) a.offset = o->get<std::uint64_t>();
  else a.offset = offset;
  a.state = r->value("state", "");
  return a;
}

std::expected<void, ResponseError> RunClient::detach(const std::string& id) {
  auto r = endpoint_.call("run/detach", json{{"id", id}});
  if (!r) return std::unexpected(r.error());
  return {};
}

std::expected<void, ResponseError> RunClient::input(const std::string& id, std::string_view data, bool eof) {
  json params{{"id", id}, {"data", json::binary(std::vector<std::uint8_t>(data.begin(), data.end()))}};
  if (eof) params["eof"] = true;
  auto r = endpoint_.call("run/input", std::move(params));
  if (!r) return std::unexpected(r.error());
  return {};
}

std::expected<void, ResponseError> RunClient::signal(const std::string& id, const std::string& signal,
                                                     bool kill_on_disconnect) {
  json sig = signal;
  if (!signal.empty() && std::all_of(signal.begin(), signal.end(), [](char c) { return c >= '0' && c <= '9'; }))
    sig = std::stoi(signal);
  json params{{"id", id}, {"signal", sig}};
  if (kill_on_disconnect) params["killOnDisconnect"] = true;
  auto r = endpoint_.call("run/signal", std::move(params));
  if (!r) return std::unexpected(r.error());
  return {};
}

std::expected<void, ResponseError> RunClient::resize(const std::string& id, int cols, int rows) {
  auto r = endpoint_.call("run/resize", json{{"id", id}, {"cols", cols}, {"rows", rows}});
  if (!r) return std::unexpected(r.error());
  return {};
}

std::expected<std::vector<RunInfo>, ResponseError> RunClient::list(bool all, bool running) {
  json params = json::object();
  if (all) params["all"] = true;
  if (running) params["running"] = true;
  auto r = endpoint_.call("run/list", std::move(params));
  if (!r) return std::unexpected(r.error());
  auto runs = r->find("runs");
  if (runs == r->end() || !runs->is_array()) return std::unexpected(bad_reply("run/list", "missing runs"));
  std::vector<RunInfo> out;
  for (const auto& e : *runs) {
    auto info = parse_run_info(e);
    if (!info) return std::unexpected(bad_reply("run/list", info.error()));
    out.push_back(std::move(*info));
  }
  return out;
}

std::expected<ReadResult, ResponseError> RunClient::read(const std::string& id, std::uint64_t offset,
                                                         std::uint64_t max_bytes) {
  auto r = endpoint_.call("run/read", json{{"id", id}, {"offset", offset}, {"maxBytes", max_bytes}});
  if (!r) return std::unexpected(r.error());
  auto parsed = parse_read_result(*r, id);
  if (!parsed) return std::unexpected(bad_reply("run/read", parsed.error()));
  return std::move(*parsed);
}

std::expected<void, ResponseError> RunClient::remove(const std::string& id) {
  auto r = endpoint_.call("run/remove", json{{"id", id}});
  if (!r) return std::unexpected(r.error());
  return {};
}

void RunClient::watch(const std::string& id, RunWatcher* watcher) {
  std::lock_guard lock(router_->mutex);
  router_->watchers.emplace(id, watcher);
}

void RunClient::unwatch(const std::string& id, RunWatcher* watcher) {
  std::lock_guard lock(router_->mutex);
  auto [b, e] = router_->watchers.equal_range(id);
  for (auto it = b; it != e; ++it)
    if (it->second == watcher) {
      router_->watchers.erase(it);
      return;
    }
}

}  // namespace ferry::run
