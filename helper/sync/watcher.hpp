// `ferry watch`'s eyes: a recursive watch of a project tree that applies the sync's ignore
// rules (ignored directories such as .git, node_modules, __pycache__ are never watched on Linux,
// and their events dropped on Windows), picks up new directories (and the files created in them
// before their watch existed, or moved in with them), coalesces a burst of events into one
// batch, and turns lost events (a kernel queue or change buffer overflow) into a rescan. The OS
// part is behind watch_backend.hpp: inotify (posix/), ReadDirectoryChangesW (windows/).
#pragma once

#include <chrono>
#include <cstddef>
#include <expected>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "helper/sync/ignore_rules.hpp"

namespace ferry::sync {

struct WatchOptions {
  // A burst ends after this long without a new event (an editor's save-all, a git checkout).
  std::chrono::milliseconds quiet{100};
  // A steady stream of events still yields a batch at least this often.
  std::chrono::milliseconds max_delay{2000};
  // More changed paths than this in one batch: report a rescan instead of the list.
  std::size_t max_paths = 20000;
  // Never watched, whatever the rules: the folders of other mappings nested in this one.
  std::vector<std::string> skipped_dirs;
};

// One settled burst: what to push.
struct WatchBatch {
  std::vector<std::string> paths;  // changed, created or removed (relative, '/'-separated, sorted)
  bool rescan = false;             // the list is incomplete: push the whole tree
  std::string reason;              // why a rescan ("inotify queue overflow", ...)
};

class WatchBackend;  // watch_backend.hpp: the OS part
struct WatchEvent;

class TreeWatcher {
 public:
  // Watches every directory under `root` that the rules built from `root` and `excludes` (as
  // the sync builds them) do not ignore.
  static std::expected<std::unique_ptr<TreeWatcher>, std::string> open(std::filesystem::path root,
                                                                       std::vector<std::string> excludes,
                                                                       WatchOptions options = {});
  ~TreeWatcher();
  TreeWatcher(const TreeWatcher&) = delete;
  TreeWatcher& operator=(const TreeWatcher&) = delete;

  // Waits up to `timeout` for a burst of changes to settle and returns it; nullopt when the
  // timeout passes with nothing pending or stop() was called. Errors: the OS watch failed or
  // the root itself went away.
  std::expected<std::optional<WatchBatch>, std::string> next(std::chrono::milliseconds timeout);

  // The sync's no-op check: every change made before this call, at once, without waiting for a
  // burst to settle (what inotify queued; on Windows the request in flight is completed first).
  // A rescan (overflow, an ignore file changed, a directory moved away, more than max_paths)
  // restarts the watch before returning, so a full walk that follows misses nothing. Errors as
  // for next(); the watcher is then unusable.
  std::expected<WatchBatch, std::string> take_pending();

  // Tests: makes the next take_pending()/next() fail as if the OS watch had.
  void fail_for_test(std::string error) { injected_error_ = std::move(error); }

  // Makes next() return nullopt at once, and every later one; safe from another thread, and on
  // POSIX from a signal handler (an eventfd write; on Windows an event is set).
  void stop();

  // The overflow path: a fresh OS watch and a new walk of the tree (ignore files re-read, new
  // directories picked up). Returns the rescan batch next() reports after one.
  WatchBatch rescan(std::string reason);

  // The directories covered: each has a watch on Linux; on Windows the root's subtree watch
  // covers them and these are the ones the walks found (ignored ones left out).
  std::size_t watched_directories() const;
  // Whether the directory `rel` ("" = the root) is covered.
  bool watches(std::string_view rel) const;
  const std::filesystem::path& root() const { return root_; }

 private:
  TreeWatcher(std::filesystem::path root, std::vector<std::string> excludes, WatchOptions options);
  std::expected<void, std::string> start();
  // Watches `rel` and every directory below it that is not ignored; every entry found is
  // added to `found` (a new directory's files were created before its watch could see them).
  // Fails only when `rel` is the root and it cannot be watched.
  std::expected<void, std::string> add_tree(const std::string& rel, std::set<std::string>* found);
  // Reads what the OS has for us (see WatchDrain) into pending_; false when the watch failed.
  bool drain(bool all_before_now, std::string& error);
  void absorb(WatchEvent& ev);
  // The burst as a batch: a rescan (the watch restarted) or the paths, pending_ emptied.
  WatchBatch take_batch();

  std::filesystem::path root_;
  std::vector<std::string> excludes_;
  WatchOptions options_;
  IgnoreMatcher ignore_;
  std::unique_ptr<WatchBackend> backend_;
  // The ignored directories the walks and events met (not those inside them): a Windows removal
  // does not say whether a directory went, and an ignored one must not be reported as a file.
  std::set<std::string, std::less<>> ignored_dirs_;
  std::set<std::string> pending_;
  bool pending_rescan_ = false;
  std::string rescan_reason_;
  bool root_gone_ = false;
  std::string injected_error_;
  std::chrono::steady_clock::time_point first_event_{}, last_event_{};
};

}  // namespace ferry::sync
