// `ferry ARGS...` as a child process for the CLI tests: stdout and stderr on their own pipes, read
// by a thread into strings that waits can watch; stdin from a pipe the test writes (or /dev/null);
// its own process group (a SIGINT reaches ferry alone, as a terminal's reaches its job) and
// SIGPIPE at its default, as a shell starts it.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace ferry::test {

class FerryProcess {
 public:
  FerryProcess(const std::filesystem::path& ferry, const std::filesystem::path& cwd, const std::vector<std::string>& args,
               bool stdin_pipe = false) {
    int out[2], err[2], in[2];
    if (::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC) || ::pipe2(in, O_CLOEXEC)) throw std::runtime_error("pipe2");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);  // our SIGINTs reach ferry only, as a terminal's would reach its job
      ::signal(SIGPIPE, SIG_DFL);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      if (stdin_pipe) ::dup2(in[0], 0);
      else {
        int null = ::open("/dev/null", O_RDONLY);
        ::dup2(null, 0);
      }
      if (::chdir(cwd.c_str()) != 0) ::_exit(126);
      std::vector<char*> argv{const_cast<char*>(ferry.c_str())};
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(ferry.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    ::close(in[0]);
    if (stdin_pipe) stdin_ = in[1];
    else ::close(in[1]);
    reader_ = std::thread([this, o = out[0], e = err[0]] { read_loop(o, e); });
  }
  ~FerryProcess() {
    if (stdin_ >= 0) ::close(stdin_);
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
    }
    if (reader_.joinable()) reader_.join();
  }

  void write_stdin(const std::string& s) {
    if (::write(stdin_, s.data(), s.size()) != static_cast<ssize_t>(s.size())) throw std::runtime_error("write to ferry's stdin failed");
  }
  void close_stdin() {
    ::close(stdin_);
    stdin_ = -1;
  }
  void signal(int s) { ::kill(pid_, s); }

  // Waits until stdout (or stderr) holds `what` or `limit` passes.
  bool wait_out(const std::string& what, std::chrono::milliseconds limit = std::chrono::seconds(30), bool on_stderr = false) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, limit, [&] { return (on_stderr ? err_ : out_).find(what) != std::string::npos || eof_; }) &&
           (on_stderr ? err_ : out_).find(what) != std::string::npos;
  }
  bool wait_out_size(std::size_t n, std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, limit, [&] { return out_.size() >= n || eof_; }) && out_.size() >= n;
  }
  // The exit status (WEXITSTATUS, or -1), after both pipes reached EOF; kills after `limit`.
  int wait(std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    {
      std::unique_lock lock(mutex_);
      if (!cv_.wait_for(lock, limit, [&] { return eof_; })) ::kill(pid_, SIGKILL);
    }
    int st = 0;
    ::waitpid(pid_, &st, 0);
    status_ = st;
    if (reader_.joinable()) reader_.join();
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  std::string out() {
    std::lock_guard lock(mutex_);
    return out_;
  }
  std::string err() {
    std::lock_guard lock(mutex_);
    return err_;
  }

 private:
  void read_loop(int o, int e) {
    pollfd fds[2] = {{o, POLLIN, 0}, {e, POLLIN, 0}};
    int open = 2;
    char buf[65536];
    while (open > 0) {
      if (::poll(fds, 2, -1) < 0) continue;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || !fds[i].revents) continue;
        ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
        std::lock_guard lock(mutex_);
        if (n <= 0) {
          ::close(fds[i].fd);
          fds[i].fd = -1;
          --open;
        } else {
          (i == 0 ? out_ : err_).append(buf, static_cast<std::size_t>(n));
        }
        cv_.notify_all();
      }
    }
    std::lock_guard lock(mutex_);
    eof_ = true;
    cv_.notify_all();
  }

  pid_t pid_ = -1;
  int stdin_ = -1;
  std::optional<int> status_;
  std::thread reader_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::string out_, err_;
  bool eof_ = false;
};

}  // namespace ferry::test
