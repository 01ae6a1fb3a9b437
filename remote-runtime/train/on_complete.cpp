// Completion hooks: /bin/sh -c via posix_spawn and a minimal blocking HTTP/1.1 POST with deadlines.
#include "remote-runtime/train/on_complete.hpp"

#include <netdb.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

extern char** environ;

namespace ferry::train {

std::string HttpUrl::redacted() const {
  const auto q = target.find('?');
  return "http://" + host + ":" + std::to_string(port) + (q == std::string::npos ? target : target.substr(0, q));
}

std::expected<HttpUrl, std::string> parse_http_url(const std::string& url) {
  if (url.starts_with("https://")) {
    return std::unexpected("webhook: https URLs are not supported by ferry-train's built-in client (plain http:// only)");
  }
  if (!url.starts_with("http://")) return std::unexpected("webhook: URL must start with http://");
  const auto rest = url.substr(7);
  const auto slash = rest.find_first_of("/?");
  auto authority = rest.substr(0, slash);
  HttpUrl out;
  out.target = slash == std::string::npos ? "/" : rest.substr(slash);
  if (out.target.starts_with("?")) out.target = "/" + out.target;
  if (authority.find('@') != std::string::npos) return std::unexpected("webhook: credentials in the URL are not supported");
  const auto colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']') == std::string::npos) {
    const auto port_text = authority.substr(colon + 1);
    char* end = nullptr;
    const long port = std::strtol(port_text.c_str(), &end, 10);
    if (port_text.empty() || *end != '\0' || port < 1 || port > 65535) return std::unexpected("webhook: bad port in URL");
    out.port = static_cast<int>(port);
    authority = authority.substr(0, colon);
  }
  if (authority.starts_with("[") && authority.ends_with("]")) authority = authority.substr(1, authority.size() - 2);
  if (authority.empty()) return std::unexpected("webhook: URL has no host");
  out.host = authority;
  return out;
}

namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

bool wait_fd(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, events, 0};
    const int rc = ::poll(&p, 1, static_cast<int>(left.count()));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return false;
  }
}

}  // namespace

std::expected<int, std::string> http_post_json(const HttpUrl& url, const std::string& body,
                                               std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const auto port = std::to_string(url.port);
  if (const int rc = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return std::unexpected("webhook " + url.redacted() + ": cannot resolve host: " + ::gai_strerror(rc));
  }
  std::string last_error = "no address";
  int connected = -1;
  for (auto* ai = found; ai && connected < 0; ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
      last_error = std::strerror(errno);
      ::close(fd);
      continue;
    }
    int err = 0;
    socklen_t len = sizeof(err);
    if (!wait_fd(fd, POLLOUT, deadline) || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      last_error = err ? std::strerror(err) : "connect timed out";
      ::close(fd);
      continue;
    }
    connected = fd;
  }
  ::freeaddrinfo(found);
  if (connected < 0) return std::unexpected("webhook " + url.redacted() + ": connect failed: " + last_error);
  Fd sock(connected);

  std::string request = "POST " + url.target + " HTTP/1.1\r\nHost: " + url.host + ":" + port +
                        "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                        "\r\nConnection: close\r\nUser-Agent: ferry-train\r\n\r\n" + body;
  std::size_t sent = 0;
  while (sent < request.size()) {
    if (!wait_fd(sock.get(), POLLOUT, deadline)) return std::unexpected("webhook " + url.redacted() + ": send timed out");
    const auto n = ::send(sock.get(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return std::unexpected("webhook " + url.redacted() + ": send failed: " + std::strerror(errno));
    }
    sent += static_cast<std::size_t>(n);
  }
  std::string response;
  char buf[4096];
  while (response.find("\r\n") == std::string::npos && response.size() < 65536) {
    if (!wait_fd(sock.get(), POLLIN, deadline)) return std::unexpected("webhook " + url.redacted() + ": no response in time");
    const auto n = ::recv(sock.get(), buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return std::unexpected("webhook " + url.redacted() + ": receive failed: " + std::strerror(errno));
    }
    if (n == 0) break;
    response.append(buf, static_cast<std::size_t>(n));
  }
  // "HTTP/1.1 204 No Content"
  if (!response.starts_with("HTTP/1.") || response.size() < 12) {
    return std::unexpected("webhook " + url.redacted() + ": malformed HTTP response");
  }
  const int status = std::atoi(response.substr(9, 3).c_str());
  if (status < 100 || status > 599) return std::unexpected("webhook " + url.redacted() + ": malformed status line");
  return status;
}

std::expected<int, std::string> run_shell_command(const std::string& command, const std::string& done_json) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    if (!std::string_view(*e).starts_with("FERRY_TRAIN_DONE=")) env_strings.emplace_back(*e);
  }
  env_strings.push_back("FERRY_TRAIN_DONE=" + done_json);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  // The command's stdout would corrupt our JSON-lines stdout: send it to stderr.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, "/bin/sh", &actions, nullptr, const_cast<char* const*>(argv), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return std::unexpected(std::string("on_complete command: spawn failed: ") + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return std::unexpected(std::string("on_complete command: wait failed: ") + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

}  // namespace ferry::train
