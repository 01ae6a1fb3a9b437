// The OS half of TreeWatcher (watcher.hpp), internal to ferry_sync_watch: how a directory is
// watched, listed and waited on, and the OS's events turned into paths relative to the root.
// What to report, the ignore rules, coalescing and rescans stay in watcher.cpp. One
// implementation per platform, picked by helper/sync/CMakeLists.txt:
//   posix/watch_backend.cpp    inotify: one watch per directory (the caller adds each one it
//                              walks), IN_Q_OVERFLOW as `overflow`.
//   windows/watch_backend.cpp  ReadDirectoryChangesW on the root with bWatchSubtree=TRUE: one
//                              watch covers the tree (watch_directory only records the
//                              directory); a lost buffer (ERROR_NOTIFY_ENUM_DIR, or zero bytes)
//                              as `overflow`; UTF-16 names as UTF-8.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::sync {

struct WatchEvent {
  enum class Kind : std::uint8_t {
    changed,     // the entry itself: written (POSIX: closed after writing), attributes
    created,
    removed,
    moved_from,  // renamed away, within the tree or out of it
    moved_to,    // renamed here, from within the tree or from outside it
    overflow,    // events were lost: only a new walk knows the tree (`reason` says why)
    root_gone,   // the root itself was deleted or moved
  };
  Kind kind = Kind::changed;
  std::string path;  // relative to the root, '/'-separated, UTF-8 where the OS's names are UTF-16
  // Whether the entry is a directory; nullopt where the OS does not say and it is gone (a
  // Windows removal of a directory the backend did not record).
  std::optional<bool> is_dir;
  std::string reason;  // overflow only

  static WatchEvent overflowed(std::string why) {
    WatchEvent e;
    e.kind = Kind::overflow;
    e.reason = std::move(why);
    return e;
  }
  static WatchEvent root_went() {
    WatchEvent e;
    e.kind = Kind::root_gone;
    return e;
  }
};

// One entry of a listed directory. A link (a Windows junction too) is never a directory.
struct WatchEntry {
  std::string name;  // UTF-8
  bool is_dir = false;
};

struct WatchError {
  bool gone = false;  // not there, or not a directory (any more): nothing worth a warning
  std::string message;
};

enum class WatchWake : std::uint8_t { events, timeout, stopped };

// How much read() collects.
enum class WatchDrain : std::uint8_t {
  ready,           // what has been delivered, without waiting
  all_before_now,  // every change made before the call (Windows: the request in flight is
                   // completed first, so a delivery on its way is not left for later)
};

class WatchBackend {
 public:
  // Nothing watched yet: restart() begins. Errors: the stop signal could not be made.
  static std::expected<std::unique_ptr<WatchBackend>, std::string> open(const std::filesystem::path& root);
  virtual ~WatchBackend() = default;

  // Drops every watch and queued event and begins anew (the first start and every rescan).
  // POSIX: a new inotify instance. Windows: the root opened again and the subtree watch asked.
  virtual std::expected<void, std::string> restart() = 0;

  // Covers directory `rel` ("" = the root) before the caller lists it, so an entry made between
  // the two is seen by one or both.
  virtual std::expected<void, WatchError> watch_directory(const std::string& rel) = 0;
  virtual bool watches(std::string_view rel) const = 0;
  virtual std::size_t watched_directories() const = 0;

  // The entries of directory `rel` other than "." and "..", links not followed; false when it
  // cannot be read (it may have gone). Names that are not valid UTF-16 are left out (Windows).
  virtual bool list(const std::string& rel, std::vector<WatchEntry>& out) = 0;

  // Waits up to `timeout` for events to read; `stopped` once stop() was called, and from then on.
  virtual std::expected<WatchWake, std::string> wait(std::chrono::milliseconds timeout) = 0;

  // Appends the events queued so far, without blocking (all_before_now: see WatchDrain). Errors: the
  // watch itself failed.
  virtual std::expected<void, std::string> read(std::vector<WatchEvent>& out, WatchDrain drain) = 0;

  // Makes wait() return `stopped`, now and from then on: safe from any thread, and on POSIX
  // from a signal handler.
  virtual void stop() = 0;

 protected:
  WatchBackend() = default;
  WatchBackend(const WatchBackend&) = delete;
  WatchBackend& operator=(const WatchBackend&) = delete;
};

}  // namespace ferry::sync
