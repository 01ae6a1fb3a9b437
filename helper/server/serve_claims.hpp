// Which `ferry serve` serves a project when several run on it. LSP4IJ starts its user-defined
// servers in every project, and a template imported again is a second server beside the first:
// two servers would sync each save twice, show every lens twice and start two links. The first
// server to need a trusted project holds <root>/.ferry/serve.lock (an exclusive lock naming it,
// released when it ends, however it ends); any other defers to it for that project: no link, no
// sync on save, no lenses, no runs. A deferring server looks again every kRetakeInterval and
// takes the project over once the holder is gone. A holder that yields (a daemon, to an editor's
// server: the `evict` hook) is asked to go and waited for, up to kEvictWait.
#pragma once

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/unique_fd.hpp"

namespace ferry::server {

inline constexpr std::chrono::milliseconds kRetakeInterval{500};
inline constexpr std::chrono::seconds kEvictWait{10};

class ServeClaims {
 public:
  // `claimed`: a project is this server's from now on (first claimed, or taken over; called
  // outside any lock). `taken_over`: after `claimed`, when this server had deferred on it.
  using TakenOver = std::function<void(const std::filesystem::path& root)>;
  explicit ServeClaims(TakenOver taken_over = {}, TakenOver claimed = {})
      : taken_over_(std::move(taken_over)), claimed_(std::move(claimed)) {}
  ~ServeClaims();  // stops looking; every claim is released as its descriptor closes
  ServeClaims(const ServeClaims&) = delete;
  ServeClaims& operator=(const ServeClaims&) = delete;

  // Asked when another process holds a project: true when it was asked to let go (a daemon), and
  // the claim then waits for its lock. Set before the first claim.
  using Evict = std::function<bool(const std::filesystem::path& root)>;
  void set_evict(Evict evict) { evict_ = std::move(evict); }

  // nullopt when this server serves the project at `root`, claiming it now when nobody else does
  // (a lock file that cannot be made or locked does not stop it: nothing to coordinate with);
  // else who does ("ferry serve (pid 123)").
  std::optional<std::string> claim(const std::filesystem::path& root);
  // As claim(), but never creates the lock file (for a project not trusted yet: nothing is
  // written into it): who holds it, if another server does.
  std::optional<std::string> held_elsewhere(const std::filesystem::path& root);

 private:
  std::optional<std::string> try_claim_locked(const std::filesystem::path& root);
  void watch(std::stop_token stop);

  TakenOver taken_over_;
  TakenOver claimed_;
  Evict evict_;
  std::mutex mutex_;
  std::condition_variable_any cv_;
  std::map<std::filesystem::path, ferry::posix::UniqueFd> held_;
  std::map<std::filesystem::path, std::string> deferred_;  // root -> its holder, looked at again
  std::jthread watcher_;  // started on the first deferral; last, so it stops first
};

}  // namespace ferry::server
