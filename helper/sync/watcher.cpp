// The recursive inotify watch behind `ferry watch` (see watcher.hpp). Directory events carry
// names, so one watch per directory covers its files; a kernel queue overflow loses events, so
// it is answered with a fresh inotify instance and a full walk rather than trusting the rest.
#include "helper/sync/watcher.hpp"

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

#include <spdlog/spdlog.h>

namespace ferry::sync {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Directory watches: names of what changed inside. IN_CLOSE_WRITE rather than IN_MODIFY, so a
// file being written is reported once, when the writer is done.
constexpr std::uint32_t kDirMask = IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB |
                                   IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK;

std::string join(const std::string& dir, std::string_view name) {
  return dir.empty() ? std::string(name) : dir + "/" + std::string(name);
}

bool is_ignore_file(std::string_view name) { return name == kGitignoreName || name == kFerryignoreName; }

}  // namespace

TreeWatcher::TreeWatcher(fs::path root, std::vector<std::string> excludes, WatchOptions options)
    : root_(std::move(root)),
      excludes_(std::move(excludes)),
      options_(options),
      ignore_(IgnoreMatcher::for_tree(root_, excludes_, options_.skipped_dirs)) {}

TreeWatcher::~TreeWatcher() {
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

std::expected<std::unique_ptr<TreeWatcher>, std::string> TreeWatcher::open(fs::path root, std::vector<std::string> excludes,
                                                                           WatchOptions options) {
  std::unique_ptr<TreeWatcher> w(new TreeWatcher(std::move(root), std::move(excludes), options));
  w->stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (w->stop_fd_ < 0) return std::unexpected(std::string("eventfd: ") + std::strerror(errno));
  if (auto started = w->start(); !started) return std::unexpected(started.error());
  return w;
}

std::expected<void, std::string> TreeWatcher::start() {
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
  dirs_.clear();
  wd_of_.clear();
  inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) return std::unexpected(std::string("inotify_init1: ") + std::strerror(errno));
  add_tree("", nullptr);
  if (!watches("")) return std::unexpected("watch " + root_.string() + ": " + std::strerror(errno));
  return {};
}

bool TreeWatcher::watches(std::string_view rel) const { return wd_of_.find(rel) != wd_of_.end(); }

void TreeWatcher::add_tree(const std::string& rel, std::set<std::string>* found) {
  std::vector<std::string> stack{rel};
  while (!stack.empty()) {
    std::string dir = std::move(stack.back());
    stack.pop_back();
    const fs::path abs = dir.empty() ? root_ : root_ / dir;
    // The watch first, then the listing: an entry created in between is seen by one or both.
    int wd = ::inotify_add_watch(inotify_fd_, abs.c_str(), kDirMask);
    if (wd < 0) {
      if (errno == ENOSPC) {
        spdlog::warn("watch: out of inotify watches at '{}' (raise fs.inotify.max_user_watches)", dir);
      } else if (errno != ENOENT && errno != ENOTDIR) {
        spdlog::warn("watch '{}': {}", dir, std::strerror(errno));
      }
      continue;
    }
    if (auto old = dirs_.find(wd); old != dirs_.end() && old->second != dir) wd_of_.erase(old->second);  // moved here
    dirs_[wd] = dir;
    wd_of_[dir] = wd;
    DIR* d = ::opendir(abs.c_str());
    if (!d) continue;
    while (dirent* e = ::readdir(d)) {
      std::string_view name = e->d_name;
      if (name == "." || name == "..") continue;
      bool is_dir = e->d_type == DT_DIR;
      if (e->d_type == DT_UNKNOWN) {
        struct stat st {};
        is_dir = ::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
      }
      const std::string child = join(dir, name);
      if (ignore_.is_ignored_entry(child, is_dir)) continue;
      if (found) found->insert(child);
      if (is_dir) stack.push_back(child);
    }
    ::closedir(d);
  }
}

bool TreeWatcher::drain(std::string& error) {
  if (!injected_error_.empty()) {
    error = injected_error_;
    return false;
  }
  alignas(inotify_event) char buf[64 * 1024];
  for (;;) {
    ssize_t n = ::read(inotify_fd_, buf, sizeof buf);
    if (n < 0) {
      if (errno == EAGAIN) return true;
      if (errno == EINTR) continue;
      error = std::string("read inotify: ") + std::strerror(errno);
      return false;
    }
    if (n == 0) return true;
    const auto now = Clock::now();
    for (char* p = buf; p < buf + n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(p);
      p += sizeof(inotify_event) + ev->len;
      if (pending_.empty() && !pending_rescan_) first_event_ = now;
      last_event_ = now;
      if (ev->mask & IN_Q_OVERFLOW) {
        pending_rescan_ = true;
        rescan_reason_ = "inotify queue overflow";
        continue;
      }
      auto it = dirs_.find(ev->wd);
      if (it == dirs_.end()) continue;  // a watch already dropped
      const std::string dir = it->second;
      if (ev->mask & IN_IGNORED) {
        wd_of_.erase(dir);
        dirs_.erase(it);
        continue;
      }
      if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
        if (dir.empty()) root_gone_ = true;
        continue;  // the parent's IN_DELETE / IN_MOVED_FROM names it
      }
      if (ev->len == 0) continue;
      const std::string_view name(ev->name);
      const std::string rel = join(dir, name);
      const bool is_dir = ev->mask & IN_ISDIR;
      if (is_ignore_file(name)) {
        // The rules changed: what is ignored now is only known after a new walk.
        pending_rescan_ = true;
        rescan_reason_ = "'" + rel + "' changed";
        continue;
      }
      if (ignore_.is_ignored(rel, is_dir)) continue;
      pending_.insert(rel);
      if (is_dir && (ev->mask & (IN_CREATE | IN_MOVED_TO))) add_tree(rel, &pending_);
      if (is_dir && (ev->mask & IN_MOVED_FROM)) {
        // Its files left with it, unseen one by one: only a full push finds them all.
        pending_rescan_ = true;
        rescan_reason_ = "directory '" + rel + "' moved away";
      }
    }
  }
}

WatchBatch TreeWatcher::rescan(std::string reason) {
  ignore_ = IgnoreMatcher::for_tree(root_, excludes_, options_.skipped_dirs);
  if (auto started = start(); !started) spdlog::warn("watch: rescan: {}", started.error());
  pending_.clear();
  pending_rescan_ = false;
  rescan_reason_.clear();
  return WatchBatch{{}, true, std::move(reason)};
}

std::expected<std::optional<WatchBatch>, std::string> TreeWatcher::next(std::chrono::milliseconds timeout) {
  const auto give_up = Clock::now() + timeout;
  for (;;) {
    const auto now = Clock::now();
    const bool have = !pending_.empty() || pending_rescan_;
    if (have && (now >= last_event_ + options_.quiet || now >= first_event_ + options_.max_delay)) {
      if (pending_rescan_ || pending_.size() > options_.max_paths) {
        std::string reason = pending_rescan_ ? rescan_reason_ : std::to_string(pending_.size()) + " paths changed";
        return rescan(std::move(reason));
      }
      WatchBatch b;
      b.paths.assign(pending_.begin(), pending_.end());
      pending_.clear();
      return b;
    }
    if (!have && now >= give_up) return std::nullopt;
    auto until = have ? std::min(last_event_ + options_.quiet, first_event_ + options_.max_delay) : give_up;
    auto wait_ms = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
    pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    int r = ::poll(fds, 2, static_cast<int>(std::clamp<long long>(wait_ms, 0, 60'000)));
    if (r < 0 && errno != EINTR) return std::unexpected(std::string("poll: ") + std::strerror(errno));
    if (r > 0 && fds[1].revents) return std::nullopt;  // stopped: stays readable, so every later next() too
    if (r > 0 && fds[0].revents) {
      std::string error;
      if (!drain(error)) return std::unexpected(error);
      if (root_gone_) return std::unexpected(root_.string() + " was deleted or moved");
    }
  }
}

std::expected<WatchBatch, std::string> TreeWatcher::take_pending() {
  std::string error;
  if (!drain(error)) return std::unexpected(error);
  if (root_gone_) return std::unexpected(root_.string() + " was deleted or moved");
  if (pending_rescan_ || pending_.size() > options_.max_paths) {
    std::string reason = pending_rescan_ ? rescan_reason_ : std::to_string(pending_.size()) + " paths changed";
    WatchBatch b = rescan(std::move(reason));
    if (!watches("")) return std::unexpected("watch " + root_.string() + " could not be restarted");
    return b;
  }
  WatchBatch b;
  b.paths.assign(pending_.begin(), pending_.end());
  pending_.clear();
  return b;
}

void TreeWatcher::stop() {
  std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(stop_fd_, &one, sizeof one);
}

}  // namespace ferry::sync
