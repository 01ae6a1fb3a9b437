// The local socket of a project's live `ferry serve`, so that a terminal's ferry command rides
// the editor's link, agent and warm file index instead of making its own (docs/architecture.md,
// "The project socket"). A Unix socket in the user's runtime directory ($XDG_RUNTIME_DIR/ferry,
// else /tmp/ferry-UID: made 0700, and refused unless the user owns it and nobody else may enter),
// mode 0600, named by a hash of the project's root; a peer of another uid is dropped at once
// (SO_PEERCRED). No TCP listener. A socket left by a server that died is found dead and replaced.
// POSIX only for now: on Windows listen() and connect_project_socket() say so.
#pragma once

#include <atomic>
#include <expected>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace ferry::server {

// Where the project rooted at `root` (canonical) listens; an error when no private directory
// can be had.
std::expected<std::filesystem::path, std::string> project_socket_path(const std::filesystem::path& root);

class ProjectSocket {
 public:
  // Serves one accepted connection (its fd, closed after) on a thread of its own.
  using Serve = std::function<void(int fd)>;

  // Binds and listens at `path`; a live listener there is an error, a dead one's file is
  // replaced.
  static std::expected<std::unique_ptr<ProjectSocket>, std::string> listen(const std::filesystem::path& path, Serve serve);
  ~ProjectSocket();  // stops accepting, ends the connections (their fds shut down), removes the file
  ProjectSocket(const ProjectSocket&) = delete;
  ProjectSocket& operator=(const ProjectSocket&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Connections refused for their uid so far (tests).
  int refused() const { return refused_.load(); }

 private:
  ProjectSocket(std::filesystem::path path, int fd, Serve serve);
  void accept_loop();

  std::filesystem::path path_;
  int fd_ = -1;
  int wake_[2] = {-1, -1};  // a byte here ends accept_loop
  Serve serve_;
  std::atomic<int> refused_{0};
  struct Connection {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::mutex mutex_;
  std::vector<int> live_;  // accepted fds being served
  std::vector<Connection> connections_;  // finished ones are joined at the next accept
  std::thread acceptor_;
};

// A connected fd to the server at `path`; nullopt when nobody listens there (no file, or a dead
// socket), an error for anything else (a path that is not ours).
std::expected<std::optional<int>, std::string> connect_project_socket(const std::filesystem::path& path);

}  // namespace ferry::server
