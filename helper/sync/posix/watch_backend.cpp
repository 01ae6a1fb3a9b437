// TreeWatcher's OS half on Linux (see watch_backend.hpp): inotify. Directory events carry
// names, so one watch per directory covers its files; a kernel queue overflow (IN_Q_OVERFLOW)
// loses events, so it is reported as `overflow` and answered by the caller with a fresh inotify
// instance and a full walk rather than trusting the rest. stop() writes an eventfd.
#include "helper/sync/watch_backend.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

namespace ferry::sync {
namespace {

namespace fs = std::filesystem;

// Directory watches: names of what changed inside. IN_CLOSE_WRITE rather than IN_MODIFY, so a
// file being written is reported once, when the writer is done.
constexpr std::uint32_t kDirMask = IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB |
                                   IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK;

std::string join(const std::string& dir, std::string_view name) {
  return dir.empty() ? std::string(name) : dir + "/" + std::string(name);
}

class InotifyBackend final : public WatchBackend {
 public:
  InotifyBackend(fs::path root, int stop_fd) : root_(std::move(root)), stop_fd_(stop_fd) {}
  ~InotifyBackend() override {
    if (inotify_fd_ >= 0) ::close(inotify_fd_);
    ::close(stop_fd_);
  }

  std::expected<void, std::string> restart() override {
    if (inotify_fd_ >= 0) ::close(inotify_fd_);
    dirs_.clear();
    wd_of_.clear();
    inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_fd_ < 0) return std::unexpected(std::string("inotify_init1: ") + std::strerror(errno));
    return {};
  }

  std::expected<void, WatchError> watch_directory(const std::string& rel) override {
    const fs::path abs = rel.empty() ? root_ : root_ / rel;
    const int wd = ::inotify_add_watch(inotify_fd_, abs.c_str(), kDirMask);
    if (wd < 0) {
      const int e = errno;
      if (e == ENOSPC) return std::unexpected(WatchError{false, "out of inotify watches (raise fs.inotify.max_user_watches)"});
      return std::unexpected(WatchError{e == ENOENT || e == ENOTDIR, std::strerror(e)});
    }
    if (auto old = dirs_.find(wd); old != dirs_.end() && old->second != rel) wd_of_.erase(old->second);  // moved here
    dirs_[wd] = rel;
    wd_of_[rel] = wd;
    return {};
  }

  bool watches(std::string_view rel) const override { return wd_of_.find(rel) != wd_of_.end(); }
  std::size_t watched_directories() const override { return dirs_.size(); }

  bool list(const std::string& rel, std::vector<WatchEntry>& out) override {
    const fs::path abs = rel.empty() ? root_ : root_ / rel;
    DIR* d = ::opendir(abs.c_str());
    if (!d) return false;
    while (dirent* e = ::readdir(d)) {
      const std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      bool is_dir = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {
        struct stat st {};
        is_dir = ::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
      }
      out.push_back(WatchEntry{std::string(name), is_dir});
    }
    ::closedir(d);
    return true;
  }

  std::expected<WatchWake, std::string> wait(std::chrono::milliseconds timeout) override {
    pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
    const int r = ::poll(fds, 2, static_cast<int>(std::clamp<long long>(timeout.count(), 0, 60'000)));
    if (r < 0) {
      if (errno == EINTR) return WatchWake::timeout;  // the caller's loop waits again for what is left
      return std::unexpected(std::string("poll: ") + std::strerror(errno));
    }
    if (r > 0 && fds[0].revents) return WatchWake::stopped;  // the eventfd stays readable
    if (r > 0 && fds[1].revents) return WatchWake::events;
    return WatchWake::timeout;
  }

  // Everything inotify queued happened inside the syscall that made the change, so `drain`
  // makes no difference here: what is queued is read.
  std::expected<void, std::string> read(std::vector<WatchEvent>& out, WatchDrain) override {
    alignas(inotify_event) char buf[64 * 1024];
    for (;;) {
      const ssize_t n = ::read(inotify_fd_, buf, sizeof buf);
      if (n < 0) {
        if (errno == EAGAIN) return {};
        if (errno == EINTR) continue;
        return std::unexpected(std::string("read inotify: ") + std::strerror(errno));
      }
      if (n == 0) return {};
      for (char* p = buf; p < buf + n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(p);
        p += sizeof(inotify_event) + ev->len;
        if (ev->mask & IN_Q_OVERFLOW) {
          out.push_back(WatchEvent::overflowed("inotify queue overflow"));
          continue;
        }
        auto it = dirs_.find(ev->wd);
        if (it == dirs_.end()) continue;  // a watch already dropped
        const std::string& dir = it->second;
        if (ev->mask & IN_IGNORED) {
          wd_of_.erase(dir);
          dirs_.erase(it);
          continue;
        }
        if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
          if (dir.empty()) out.push_back(WatchEvent::root_went());
          continue;  // the parent's IN_DELETE / IN_MOVED_FROM names it
        }
        if (ev->len == 0) continue;
        WatchEvent e;
        e.path = join(dir, std::string_view(ev->name));
        e.is_dir = (ev->mask & IN_ISDIR) != 0;
        if (ev->mask & IN_CREATE) e.kind = WatchEvent::Kind::created;
        else if (ev->mask & IN_DELETE) e.kind = WatchEvent::Kind::removed;
        else if (ev->mask & IN_MOVED_FROM) e.kind = WatchEvent::Kind::moved_from;
        else if (ev->mask & IN_MOVED_TO) e.kind = WatchEvent::Kind::moved_to;
        else e.kind = WatchEvent::Kind::changed;  // IN_CLOSE_WRITE, IN_ATTRIB
        out.push_back(std::move(e));
      }
    }
  }

  void stop() override {
    std::uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(stop_fd_, &one, sizeof one);
  }

 private:
  fs::path root_;
  int stop_fd_;
  int inotify_fd_ = -1;
  std::map<int, std::string> dirs_;  // watch descriptor -> directory relative to the root
  std::map<std::string, int, std::less<>> wd_of_;
};

}  // namespace

std::expected<std::unique_ptr<WatchBackend>, std::string> WatchBackend::open(const fs::path& root) {
  const int stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) return std::unexpected(std::string("eventfd: ") + std::strerror(errno));
  return std::make_unique<InotifyBackend>(root, stop_fd);
}

}  // namespace ferry::sync
