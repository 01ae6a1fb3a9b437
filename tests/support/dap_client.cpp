// DapClient: DAP over TCP with Content-Length framing (protocol/framing), for tests that attach
// to a real debugpy.
#include "tests/support/dap_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

namespace ferry::test {

namespace {

using Clock = std::chrono::steady_clock;

int connect_loopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(left, 0, 60'000));
}

}  // namespace

DapClient::~DapClient() { close(); }

DapClient::DapClient(DapClient&& other) noexcept { *this = std::move(other); }

DapClient& DapClient::operator=(DapClient&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = std::exchange(other.fd_, -1);
    next_seq_ = other.next_seq_;
    decoder_ = std::move(other.decoder_);
    responses_ = std::move(other.responses_);
    events_ = std::move(other.events_);
    transcript_ = std::move(other.transcript_);
  }
  return *this;
}

void DapClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::expected<DapClient, std::string> DapClient::connect_and_initialize(int port, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string last = "nothing tried";
  // The adapter gives no signal when it starts listening, and a tunnel accepts before its far
  // end can: so retry (with a short backoff) until initialize is answered or the deadline passes.
  for (auto backoff = std::chrono::milliseconds(10);; backoff = std::min(backoff * 2, std::chrono::milliseconds(200))) {
    int fd = connect_loopback(port);
    if (fd < 0) {
      last = "connect to 127.0.0.1:" + std::to_string(port) + ": " + std::strerror(errno);
    } else {
      DapClient client(fd);
      const int seq = client.send_request("initialize", {{"clientID", "ferry-test"},
                                                         {"clientName", "ferry DAP test client"},
                                                         {"adapterID", "debugpy"},
                                                         {"pathFormat", "path"},
                                                         {"linesStartAt1", true},
                                                         {"columnsStartAt1", true},
                                                         {"supportsVariableType", true},
                                                         {"supportsRunInTerminalRequest", false},
                                                         {"locale", "en"}});
      auto capabilities = client.wait_response(seq, std::chrono::milliseconds(remaining_ms(deadline)));
      if (capabilities) return client;
      last = capabilities.error();
    }
    if (Clock::now() + backoff >= deadline)
      return std::unexpected("no debug adapter answered on 127.0.0.1:" + std::to_string(port) + " within " +
                             std::to_string(timeout.count()) + " ms (last: " + last + ")");
    std::this_thread::sleep_for(backoff);
  }
}

std::expected<void, std::string> DapClient::write_all(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(std::string("send: ") + std::strerror(errno));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

int DapClient::send_request(std::string_view command, const json& arguments) {
  const int seq = next_seq_++;
  json message = {{"seq", seq}, {"type", "request"}, {"command", command}, {"arguments", arguments}};
  if (fd_ >= 0) {
    // A failed write shows up as EOF in the wait that follows.
    if (!write_all(protocol::encode_frame(message.dump()))) close();
  }
  return seq;
}

std::expected<void, std::string> DapClient::pump(Clock::time_point deadline) {
  for (;;) {
    if (auto frame = decoder_.next()) {
      if (!*frame) return std::unexpected("bad frame from the adapter: " + frame->error().message);
      auto message = json::parse(**frame, nullptr, false);
      if (message.is_discarded() || !message.is_object())
        return std::unexpected("adapter sent something that is not a JSON object: " + **frame);
      if (std::getenv("FERRY_DAP_TRACE")) std::fprintf(stderr, "DAP <- %s\n", (**frame).c_str());
      transcript_ += **frame;
      transcript_ += '\n';
      const auto type = message.value("type", "");
      if (type == "response") {
        responses_.push_back(std::move(message));
      } else if (type == "event") {
        events_.push_back(std::move(message));
      } else if (type == "request") {
        // Reverse requests (runInTerminal, startDebugging) are not part of an attach: decline.
        json reply = {{"seq", next_seq_++},
                      {"type", "response"},
                      {"request_seq", message.value("seq", 0)},
                      {"command", message.value("command", "")},
                      {"success", false},
                      {"message", "not supported by the test client"}};
        (void)write_all(protocol::encode_frame(reply.dump()));
      }
      return {};
    }
    if (fd_ < 0) return std::unexpected("connection closed");
    pollfd p{fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, remaining_ms(deadline));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return std::unexpected(std::string("poll: ") + std::strerror(errno));
    }
    if (ready == 0) return std::unexpected("timed out");
    char buffer[65536];
    ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close();
      return std::unexpected("the adapter closed the connection");
    }
    decoder_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
  }
}

std::expected<json, std::string> DapClient::wait_response(int seq, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    auto it = std::find_if(responses_.begin(), responses_.end(),
                           [&](const json& r) { return r.value("request_seq", -1) == seq; });
    if (it != responses_.end()) {
      json response = std::move(*it);
      responses_.erase(it);
      const auto command = response.value("command", std::string("?"));
      if (!response.value("success", false)) {
        // Built by appending: " " + string trips GCC 12's -Wrestrict false positive.
        std::string why = command + " failed: " + response.value("message", std::string("no message"));
        if (response.contains("body")) why.append(1, ' ').append(response["body"].dump());
        return std::unexpected(why);
      }
      return response.contains("body") ? response["body"] : json::object();
    }
    if (auto more = pump(deadline); !more)
      return std::unexpected("waiting for the response to request " + std::to_string(seq) + ": " + more.error());
  }
}

std::expected<json, std::string> DapClient::request(std::string_view command, const json& arguments,
                                                    std::chrono::milliseconds timeout) {
  return wait_response(send_request(command, arguments), timeout);
}

std::expected<json, std::string> DapClient::wait_event(std::string_view event, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    auto it = std::find_if(events_.begin(), events_.end(), [&](const json& e) { return e.value("event", "") == event; });
    if (it != events_.end()) {
      json body = it->contains("body") ? (*it)["body"] : json::object();
      events_.erase(it);
      return body;
    }
    if (auto more = pump(deadline); !more)
      return std::unexpected("waiting for the " + std::string(event) + " event: " + more.error());
  }
}

}  // namespace ferry::test
