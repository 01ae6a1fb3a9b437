// SocketConnection (socket_connection.hpp).
#include "helper/server/socket_connection.hpp"

#ifndef _WIN32
#include <sys/socket.h>
#endif

#include <spdlog/spdlog.h>

#include "helper/remote/ssh_endpoint.hpp"
#include "protocol/error.hpp"
#include "protocol/json_binary.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
using p::json;

namespace {

// The end of a connection should not wait long on a link that is down.
constexpr std::chrono::milliseconds kCleanupTimeout{5000};

std::size_t weight(const json& params) {
  auto data = params.find("data");
  return 64 + (data != params.end() && data->is_binary() ? data->get_binary().size() : 0);
}

}  // namespace

SocketConnection::SocketConnection(std::uint64_t number, int fd)
    : follower_("socket-" + std::to_string(number)), fd_(fd), out_(fd, p::Encoding::json) {}

SocketConnection::~SocketConnection() {
#ifndef _WIN32
  ::shutdown(fd_, SHUT_RDWR);  // a writer blocked on a terminal that stopped reading returns
#endif
  notes_.reset();
  states_.reset();
  for (auto* t : {&writer_, &flow_})
    if (t->joinable()) {
      t->request_stop();
      t->join();
    }
  if (link_) end_on_link();
}

std::expected<void, p::ResponseError> SocketConnection::bind(const ProjectLinkPtr& link) {
  std::lock_guard lock(mutex_);
  if (link_ == link) return {};
  if (link_)
    return std::unexpected(p::ResponseError{p::error_code::kAgentUnavailable,
                                            "the live ferry's link was replaced during this command; run it again", {}});
  link_ = link;
  notes_ = link->endpoint().subscribe([this](const p::Notification& n) { on_agent_note(n); });
  states_ = link->on_state([this](const remote::HostState& s) {
    std::lock_guard lock(mutex_);
    queue_.emplace_back("link/state", remote::to_json(s));
    queued_bytes_ += 64;
    cv_.notify_all();
  });
  writer_ = std::jthread([this](std::stop_token stop) { write_loop(stop); });
  flow_ = std::jthread([this](std::stop_token stop) { flow_loop(stop); });
  return {};
}

std::expected<json, p::ResponseError> SocketConnection::call(const ProjectLinkPtr& link, const std::string& method, json params) {
  if (auto bound = bind(link); !bound) return std::unexpected(bound.error());
  const bool attach = method == "run/attach", detach = method == "run/detach";
  const std::string id = params.is_object() ? params.value("id", "") : "";
  if ((attach || detach) && params.is_object()) params["follower"] = follower_;
  if (attach) {
    // Before the call: its first record may be read before the reply reaches this thread.
    std::lock_guard lock(mutex_);
    streams_[id] = Stream{params, false};
  }
  if (method == "run/start" && params.is_object() && params.contains("attach") && params["attach"].is_object())
    return start_attached(link, std::move(params));
  auto r = link->endpoint().call(method, params);
  std::lock_guard lock(mutex_);
  if (attach && !r) streams_.erase(id);
  if (r && detach) {
    streams_.erase(id);
    kill_on_disconnect_.erase(id);
  }
  if (r && method == "run/signal" && params.is_object() && params.value("killOnDisconnect", false)) kill_on_disconnect_.insert(id);
  return r;
}

std::expected<json, p::ResponseError> SocketConnection::start_attached(const ProjectLinkPtr& link, json params) {
  params["attach"]["follower"] = follower_;
  {
    std::lock_guard lock(mutex_);
    ++starting_;
  }
  auto r = link->endpoint().call("run/start", params);
  std::lock_guard lock(mutex_);
  --starting_;
  if (r && r->contains("attached") && (*r)["id"].is_string()) {
    const std::string id = (*r)["id"].get<std::string>();
    // Made by its first record already, or now: as run/attach from 0 would have made it.
    auto& stream = streams_.try_emplace(id, Stream{json{{"id", id}, {"offset", 0}, {"follower", follower_}}, false}).first->second;
    stream.attach["ports"] = params["attach"].value("ports", false);
  }
  return r;
}

std::expected<remote::ForwardInfo, p::ResponseError> SocketConnection::forward(const ProjectLinkPtr& link,
                                                                               const remote::ForwardSpec& spec) {
  if (auto bound = bind(link); !bound) return std::unexpected(bound.error());
  auto opened = link->endpoint().open_forward(spec);
  if (opened) {
    std::lock_guard lock(mutex_);
    forwards_.insert(opened->id);
  }
  return opened;
}

std::expected<void, p::ResponseError> SocketConnection::unforward(int id) {
  ProjectLinkPtr link;
  {
    std::lock_guard lock(mutex_);
    if (!forwards_.erase(id) || !link_)
      return std::unexpected(p::ResponseError{p::error_code::kInvalidParams, "no tunnel " + std::to_string(id) + " of this command", {}});
    link = link_;
  }
  return link->endpoint().close_forward(id);
}

void SocketConnection::on_agent_note(const p::Notification& note) {
  if (!note.params.is_object() || note.params.value("follower", "") != follower_) return;
  json params = note.params;
  params.erase("follower");
  const std::string id = params.value("id", "");
  std::lock_guard lock(mutex_);
  auto stream = streams_.find(id);
  if (stream == streams_.end() && starting_ > 0)
    stream = streams_.emplace(id, Stream{json{{"id", id}, {"offset", 0}, {"follower", follower_}}, false}).first;
  if (stream == streams_.end()) return;
  if (note.method == "run/output") {
    const auto data = params.find("data");
    const std::size_t size = data != params.end() && data->is_binary() ? data->get_binary().size() : 0;
    stream->second.attach["offset"] = params.value("offset", std::uint64_t{0}) + 5 + size;
  } else if (note.method == "run/exited") {
    streams_.erase(stream);  // nothing of it to detach
  }
  queued_bytes_ += weight(params);
  queue_.emplace_back("agent/notification", json{{"method", note.method}, {"params", std::move(params)}});
  if (queued_bytes_ > kPauseBytes && !paused_) pause_asked_ = true;
  cv_.notify_all();
}

void SocketConnection::write_loop(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!cv_.wait(lock, stop, [&] { return !queue_.empty(); })) return;
    auto [method, params] = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    // Bytes cross the socket's JSON as {"$base64"} (json_binary.hpp). Blocks while the terminal
    // does not read: only this connection's queue waits.
    out_.send(json{{"jsonrpc", "2.0"}, {"method", method}, {"params", p::binary_as_text(params)}});
    lock.lock();
    queued_bytes_ -= std::min(queued_bytes_, method == "agent/notification" ? weight(params["params"]) : std::size_t{64});
    cv_.notify_all();
  }
}

// Pauses and resumes the streams as the queue fills and drains (never on the endpoint's reader
// thread, which must not wait for a reply, nor on the writer, which may be blocked).
void SocketConnection::flow_loop(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  for (;;) {
    auto resume = [&] { return paused_ && queued_bytes_ < kResumeBytes; };
    if (!cv_.wait(lock, stop, [&] { return pause_asked_ || resume(); })) return;
    const bool pausing = pause_asked_;
    lock.unlock();
    pausing ? pause_streams() : resume_streams();
    lock.lock();
  }
}

// The queue is past kPauseBytes: detach every stream (the agent then stops reading the logs), and
// resume_streams() attaches them again at the next offset once the terminal caught up.
void SocketConnection::pause_streams() {
  std::vector<std::string> ids;
  ProjectLinkPtr link;
  {
    std::lock_guard lock(mutex_);
    pause_asked_ = false;
    paused_ = true;
    link = link_;
    for (auto& [id, s] : streams_)
      if (!s.detached) {
        s.detached = true;
        ids.push_back(id);
      }
  }
  spdlog::info("{}: the terminal reads slower than its run writes; pausing {} stream(s)", follower_, ids.size());
  for (const auto& id : ids) (void)link->endpoint().call("run/detach", json{{"id", id}, {"follower", follower_}});
}

void SocketConnection::resume_streams() {
  std::vector<json> attaches;
  ProjectLinkPtr link;
  {
    std::lock_guard lock(mutex_);
    paused_ = false;
    link = link_;
    for (auto& [id, s] : streams_)
      if (s.detached) {
        s.detached = false;
        attaches.push_back(s.attach);
      }
  }
  for (const auto& a : attaches)
    if (auto r = link->endpoint().call("run/attach", a); !r)
      spdlog::warn("{}: resuming run {}: {}", follower_, a.value("id", ""), r.error().message);
}

void SocketConnection::end_on_link() {
  auto& endpoint = link_->endpoint();
  for (const auto& [id, s] : streams_)
    if (!s.detached) (void)endpoint.call("run/detach", json{{"id", id}, {"follower", follower_}}, kCleanupTimeout);
  for (const auto& id : kill_on_disconnect_) {
    // The terminal asked the run to stop, then went without letting go of it: as the agent does
    // for a helper of its own that goes.
    auto r = endpoint.call("run/signal", json{{"id", id}, {"signal", "KILL"}}, kCleanupTimeout);
    if (r) spdlog::warn("run {}: the terminal that asked it to stop went away: sent SIGKILL", id);
  }
  for (int id : forwards_) (void)endpoint.close_forward(id);
}

}  // namespace ferry::server
