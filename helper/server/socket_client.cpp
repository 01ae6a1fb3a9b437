// SocketClient (socket_client.hpp).
#include "helper/server/socket_client.hpp"

#ifndef _WIN32
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#endif

#include "common/full_io.hpp"
#include "helper/server/project_socket.hpp"

namespace ferry::server {

using nlohmann::json;
namespace p = ferry::protocol;

#ifdef _WIN32

std::unique_ptr<SocketClient> SocketClient::connect(const std::filesystem::path&) { return nullptr; }
SocketClient::SocketClient(int fd) : fd_(fd) {}
SocketClient::~SocketClient() = default;
void SocketClient::read_loop() {}
void SocketClient::dispatch(const json&) {}
bool SocketClient::send(const json&) { return false; }
std::expected<json, p::ResponseError> SocketClient::call(const std::string&, json, const std::function<void(const json&)>&,
                                                         const std::function<bool()>&, std::optional<std::chrono::milliseconds>) {
  return std::unexpected(p::ResponseError{p::error_code::kAgentUnavailable, "no project socket on Windows", {}});
}
void SocketClient::on_notification(std::function<void(const std::string&, const json&)>) {}
void SocketClient::on_closed(std::function<void(const std::string&)>) {}
bool SocketClient::closed() const { return true; }

#else

namespace {

p::ResponseError error_of(const json& e) {
  return p::ResponseError{e.value("code", 0), e.value("message", ""), e.contains("data") ? std::optional<json>(e["data"]) : std::nullopt};
}

}  // namespace

std::unique_ptr<SocketClient> SocketClient::connect(const std::filesystem::path& root) {
  auto path = project_socket_path(root);
  if (!path) return nullptr;
  auto fd = connect_project_socket(*path);
  if (!fd || !*fd) return nullptr;
  return std::unique_ptr<SocketClient>(new SocketClient(**fd));
}

SocketClient::SocketClient(int fd) : fd_(fd) {
  if (::pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
  reader_ = std::thread([this] { read_loop(); });
}

SocketClient::~SocketClient() {
  if (wake_[1] >= 0) [[maybe_unused]] auto w = ::write(wake_[1], "x", 1);
  else ::shutdown(fd_, SHUT_RDWR);
  reader_.join();
  ::close(fd_);
  for (int w : wake_)
    if (w >= 0) ::close(w);
}

bool SocketClient::send(const json& message) {
  const std::string frame = p::encode_frame(message.dump());
  std::lock_guard lock(write_mutex_);
  return ferry::posix::write_full(fd_, frame.data(), frame.size()) == static_cast<ssize_t>(frame.size());
}

void SocketClient::read_loop() {
  p::FrameDecoder decoder;
  std::string why = "the live ferry closed the connection";
  for (bool open = true; open;) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(fds, wake_[0] >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[1].revents) {
      why = "the connection was closed";
      break;
    }
    char buf[65536];
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    decoder.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    while (auto frame = decoder.next()) {
      if (!frame->has_value()) {
        why = "bad frame from the live ferry";
        open = false;
        break;
      }
      auto m = json::parse(**frame, nullptr, false);
      if (m.is_object()) dispatch(m);
    }
  }
  std::function<void(const std::string&)> closed;
  {
    std::lock_guard lock(mutex_);
    closed_ = why;
    closed = closed_handler_;
  }
  cv_.notify_all();
  if (closed) closed(why);
}

// A response to its waiting call, a $/progress to that call's callback, anything else with a
// method to the notification handler. On the reader thread.
void SocketClient::dispatch(const json& m) {
  if (auto method = m.find("method"); method != m.end() && method->is_string()) {
    const json params = m.value("params", json::object());
    std::unique_lock lock(mutex_);
    if (*method == "$/progress") {
      for (const auto& [id, w] : waiting_)
        if (w->progress && params.value("token", "") == w->token) {
          auto progress = w->progress;
          lock.unlock();
          progress(params.value("value", json()));
          return;
        }
      return;
    }
    auto handler = notification_;
    lock.unlock();
    if (handler) handler(method->get<std::string>(), params);
    return;
  }
  if (!m.contains("id") || !m["id"].is_number_integer()) return;
  std::lock_guard lock(mutex_);
  if (auto it = waiting_.find(m["id"].get<int>()); it != waiting_.end()) {
    it->second->reply = m;
    cv_.notify_all();
  }
}

std::expected<json, p::ResponseError> SocketClient::call(const std::string& method, json params,
                                                         const std::function<void(const json&)>& progress,
                                                         const std::function<bool()>& cancelled,
                                                         std::optional<std::chrono::milliseconds> limit) {
  Waiting w;
  w.progress = progress;
  int id;
  {
    std::lock_guard lock(mutex_);
    if (closed_) return std::unexpected(p::ResponseError{p::error_code::kAgentUnavailable, *closed_, {}});
    id = next_id_++;
    w.token = "cli-" + std::to_string(id);
    waiting_[id] = &w;
  }
  struct Forget {
    SocketClient& c;
    int id;
    ~Forget() {
      std::lock_guard lock(c.mutex_);
      c.waiting_.erase(id);
    }
  } forget{*this, id};
  if (progress && params.is_object()) params["workDoneToken"] = w.token;
  if (!send(json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}}))
    return std::unexpected(p::ResponseError{p::error_code::kAgentUnavailable, "cannot write to the live ferry", {}});
  const auto deadline = limit ? std::chrono::steady_clock::now() + *limit : std::chrono::steady_clock::time_point::max();
  bool cancel_sent = false;
  std::unique_lock lock(mutex_);
  for (;;) {
    if (w.reply) break;
    if (closed_) return std::unexpected(p::ResponseError{p::error_code::kAgentUnavailable, *closed_, {}});
    if (std::chrono::steady_clock::now() >= deadline)
      return std::unexpected(p::ResponseError{p::error_code::kAgentUnavailable, "no answer from the live ferry to " + method, {}});
    if (!cancel_sent && cancelled) {
      lock.unlock();
      if (cancelled()) {
        cancel_sent = true;
        send(json{{"jsonrpc", "2.0"}, {"method", "$/cancelRequest"}, {"params", {{"id", id}}}});
      }
      lock.lock();
      if (w.reply || closed_) continue;  // came while unlocked: taken above, without a wait
    }
    // Cancellation is polled: a short wait while someone may ask for it (it was a busy loop until
    // the reply, a core taken from the daemon that was computing it).
    const auto tick = std::chrono::steady_clock::now() + std::chrono::milliseconds(cancelled ? 100 : 1000);
    cv_.wait_until(lock, std::min(deadline, tick));
  }
  const json reply = std::move(*w.reply);
  if (reply.contains("error")) return std::unexpected(error_of(reply["error"]));
  return reply.value("result", json());
}

void SocketClient::on_notification(std::function<void(const std::string&, const json&)> handler) {
  std::lock_guard lock(mutex_);
  notification_ = std::move(handler);
}

void SocketClient::on_closed(std::function<void(const std::string&)> handler) {
  std::lock_guard lock(mutex_);
  closed_handler_ = std::move(handler);
}

bool SocketClient::closed() const {
  std::lock_guard lock(mutex_);
  return closed_.has_value();
}

#endif

}  // namespace ferry::server
