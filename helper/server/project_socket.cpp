// ProjectSocket (project_socket.hpp).
#include "helper/server/project_socket.hpp"

#include <cstdio>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#ifndef _WIN32
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#endif

namespace ferry::server {

namespace fs = std::filesystem;

namespace {

// FNV-1a 64: the same name for the same root in every build and process.
std::string root_digest(const std::string& root) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : root) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

}  // namespace

#ifdef _WIN32

std::expected<fs::path, std::string> project_socket_path(const fs::path&) {
  return std::unexpected(std::string("the project socket is not on Windows yet"));
}
std::expected<std::unique_ptr<ProjectSocket>, std::string> ProjectSocket::listen(const fs::path&, Serve) {
  return std::unexpected(std::string("the project socket is not on Windows yet"));
}
ProjectSocket::~ProjectSocket() = default;
std::expected<std::optional<int>, std::string> connect_project_socket(const fs::path&) { return std::optional<int>(); }

#else

namespace {

// The runtime directory, made 0700 and checked: ours, a real directory, nobody else's to enter.
std::expected<fs::path, std::string> private_runtime_dir() {
  fs::path dir;
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  if (xdg && *xdg && fs::path(xdg).is_absolute()) dir = fs::path(xdg) / "ferry";
  else dir = fs::path("/tmp") / ("ferry-" + std::to_string(::geteuid()));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return std::unexpected(dir.string() + ": " + std::strerror(errno));
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return std::unexpected(dir.string() + ": " + std::strerror(errno));
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
    return std::unexpected(dir.string() + " is not a directory of this user's; no project socket");
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0) return std::unexpected(dir.string() + ": " + std::strerror(errno));
  return dir;
}

std::optional<sockaddr_un> address_of(const fs::path& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.string().size() >= sizeof a.sun_path) return std::nullopt;
  std::memcpy(a.sun_path, path.c_str(), path.string().size());
  return a;
}

// A connected fd, or -1 with errno (ENOENT, ECONNREFUSED: nobody there).
int connect_to(const fs::path& path) {
  auto a = address_of(path);
  if (!a) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&*a), sizeof *a) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

uid_t peer_uid(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return static_cast<uid_t>(-1);
  return cred.uid;
}

}  // namespace

std::expected<fs::path, std::string> project_socket_path(const fs::path& root) {
  auto dir = private_runtime_dir();
  if (!dir) return std::unexpected(dir.error());
  return *dir / ("p-" + root_digest(root.string()) + ".sock");
}

std::expected<std::unique_ptr<ProjectSocket>, std::string> ProjectSocket::listen(const fs::path& path, Serve serve) {
  auto a = address_of(path);
  if (!a) return std::unexpected(path.string() + ": too long for a Unix socket");
  if (int live = connect_to(path); live >= 0) {
    ::close(live);
    return std::unexpected("another ferry serve listens at " + path.string());
  }
  ::unlink(path.c_str());  // a dead server's socket (or none)
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::unexpected(std::string("socket: ") + std::strerror(errno));
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&*a), sizeof *a) != 0 || ::chmod(path.c_str(), 0600) != 0 ||
      ::listen(fd, 16) != 0) {
    const std::string why = path.string() + ": " + std::strerror(errno);
    ::close(fd);
    return std::unexpected(why);
  }
  return std::unique_ptr<ProjectSocket>(new ProjectSocket(path, fd, std::move(serve)));
}

ProjectSocket::ProjectSocket(fs::path path, int fd, Serve serve) : path_(std::move(path)), fd_(fd), serve_(std::move(serve)) {
  if (::pipe2(wake_, O_CLOEXEC) != 0) wake_[0] = wake_[1] = -1;
  acceptor_ = std::thread([this] { accept_loop(); });
}

ProjectSocket::~ProjectSocket() {
  if (wake_[1] >= 0) [[maybe_unused]] auto w = ::write(wake_[1], "x", 1);
  if (acceptor_.joinable()) acceptor_.join();
  {
    std::lock_guard lock(mutex_);
    for (int c : live_) ::shutdown(c, SHUT_RDWR);  // their reads end: each serve returns
  }
  for (auto& c : connections_) c.thread.join();
  ::close(fd_);
  for (int w : wake_)
    if (w >= 0) ::close(w);
  ::unlink(path_.c_str());
}

void ProjectSocket::accept_loop() {
  for (;;) {
    pollfd p[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (::poll(p, wake_[0] >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (p[1].revents) return;
    int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    if (peer_uid(c) != ::geteuid()) {
      ++refused_;
      spdlog::warn("{}: refused a connection of uid {} (only this user's processes are served)", path_.string(), peer_uid(c));
      ::close(c);
      continue;
    }
    std::lock_guard lock(mutex_);
    // An editor's server lives for hours: the threads of connections that ended go now.
    std::erase_if(connections_, [](Connection& old) {
      if (!old.done->load()) return false;
      old.thread.join();
      return true;
    });
    live_.push_back(c);
    auto done = std::make_shared<std::atomic<bool>>(false);
    connections_.push_back({std::thread([this, c, done] {
                              serve_(c);
                              std::lock_guard finished(mutex_);
                              std::erase(live_, c);
                              ::close(c);
                              *done = true;
                            }),
                            done});
  }
}

std::expected<std::optional<int>, std::string> connect_project_socket(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::optional<int>();
  if (!S_ISSOCK(st.st_mode) || st.st_uid != ::geteuid()) return std::unexpected(path.string() + " is not this user's socket");
  int fd = connect_to(path);
  if (fd < 0) return std::optional<int>();
  return std::optional<int>(fd);
}

#endif

}  // namespace ferry::server
