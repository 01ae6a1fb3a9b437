// ServeClaims (serve_claims.hpp).
#include "helper/server/serve_claims.hpp"

#include <cerrno>
#include <cstring>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/file_lock.hpp"
#include "common/open_file.hpp"
#include "common/private_files.hpp"
#include "helper/sync/project_lock.hpp"

namespace ferry::server {

namespace fs = std::filesystem;

namespace {

fs::path lock_file(const fs::path& root) { return root / ".ferry" / "serve.lock"; }

// The lock of `fd` once its holder has let go, within `limit`.
bool lock_when_free(int fd, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (ferry::posix::try_lock_exclusive(fd) == 0) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a process's exit, not an event we can wait on
  }
}

}  // namespace

ServeClaims::~ServeClaims() {
  if (watcher_.joinable()) {
    watcher_.request_stop();
    cv_.notify_all();
    watcher_.join();
  }
}

std::optional<std::string> ServeClaims::claim(const fs::path& root) {
  std::optional<std::string> holder;
  bool fresh = false;
  {
    std::lock_guard lock(mutex_);
    const bool had = held_.contains(root);
    holder = try_claim_locked(root);
    fresh = !holder && !had && held_.contains(root);
    if (holder && !watcher_.joinable()) watcher_ = std::jthread([this](std::stop_token stop) { watch(stop); });
  }
  if (fresh && claimed_) claimed_(root);
  return holder;
}

std::optional<std::string> ServeClaims::held_elsewhere(const fs::path& root) {
  {
    std::lock_guard lock(mutex_);
    if (held_.contains(root)) return std::nullopt;
  }
  ferry::posix::UniqueFd fd(ferry::posix::open_file(lock_file(root), O_RDONLY));
  if (fd.get() < 0) return std::nullopt;  // no server ever served it here
  if (ferry::posix::try_lock_exclusive(fd.get()) == EWOULDBLOCK) return sync::ProjectLock::holder_of(fd.get());
  return std::nullopt;  // free: the probe's lock goes with its descriptor
}

std::optional<std::string> ServeClaims::try_claim_locked(const fs::path& root) {
  if (held_.contains(root)) return std::nullopt;
  ferry::posix::make_private_dirs(root / ".ferry");
  ferry::posix::UniqueFd fd(ferry::posix::open_private(lock_file(root), O_RDWR));
  if (fd.get() < 0) {
    spdlog::warn("{}: cannot open {}: {}; serving it without telling other ferry servers", root.string(),
                 lock_file(root).string(), std::strerror(errno));
    return std::nullopt;
  }
  if (const int err = ferry::posix::try_lock_exclusive(fd.get()); err == EWOULDBLOCK) {
    std::string holder = sync::ProjectLock::holder_of(fd.get());
    if (!(evict_ && evict_(root) && lock_when_free(fd.get(), kEvictWait))) {
      deferred_[root] = holder;
      return holder;
    }
    spdlog::info("{}: {} handed the project over", root.string(), holder);
  } else if (err != 0) {
    spdlog::warn("{}: cannot lock {}: {}; serving it anyway", root.string(), lock_file(root).string(), std::strerror(err));
    return std::nullopt;
  }
  sync::ProjectLock::name_self(fd.get());
  held_.emplace(root, std::move(fd));
  deferred_.erase(root);
  return std::nullopt;
}

void ServeClaims::watch(std::stop_token stop) {
  std::unique_lock lock(mutex_);
  while (!stop.stop_requested()) {
    cv_.wait_for(lock, stop, kRetakeInterval, [] { return false; });
    if (stop.stop_requested()) return;
    std::vector<fs::path> taken;
    for (auto it = deferred_.begin(); it != deferred_.end();) {
      const fs::path root = (it++)->first;  // try_claim_locked erases it when it succeeds
      if (!try_claim_locked(root)) taken.push_back(root);
    }
    if (taken.empty()) continue;
    lock.unlock();
    for (const auto& root : taken) {
      if (claimed_) claimed_(root);
      if (taken_over_) taken_over_(root);
    }
    lock.lock();
  }
}

}  // namespace ferry::server
