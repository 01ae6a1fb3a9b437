// One sync at a time per project folder, across processes: `ferry serve` (the editor's sync on
// save) and a terminal's `ferry sync` / `ferry run` take turns on <root>/.ferry/sync.lock (flock)
// for each push or pull, so their manifests, hash index and sent copies are never written by
// both at once. What each one's in-memory view misses of the other's writes the agent's sync
// generation catches (the next push lists the remote; docs/sync.md). The lock file names its
// holder, so the one waiting can say who it waits for.
#pragma once

#include <chrono>
#include <expected>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>

#include "common/unique_fd.hpp"
#include "protocol/error.hpp"

namespace ferry::sync {

class ProjectLock {
 public:
  // Takes the lock, waiting as long as another process (or engine) holds it: `waiting` is
  // called once with the holder's description, `cancelled` is polled while waiting. Errors:
  // io (the lock file cannot be opened or locked), cancelled.
  static std::expected<ProjectLock, Error> acquire(const std::filesystem::path& local_root,
                                                         const std::function<void(const std::string& holder)>& waiting = {},
                                                         const std::function<bool()>& cancelled = {});
  ProjectLock(ProjectLock&& other) noexcept = default;
  ProjectLock& operator=(ProjectLock&&) = delete;
  ProjectLock(const ProjectLock&) = delete;
  ~ProjectLock() = default;  // closing the last descriptor releases the flock

  // What a holder writes into the lock file: "ferry serve (pid 123)".
  static std::string describe_self();
  // What the holder of the lock file open at `fd` wrote (or "another ferry process").
  static std::string holder_of(int fd);
  // Writes describe_self() into the lock file open at `fd` (only a hint for those who wait).
  static void name_self(int fd);

 private:
  explicit ProjectLock(ferry::posix::UniqueFd fd) : fd_(std::move(fd)) {}
  ferry::posix::UniqueFd fd_;
};

}  // namespace ferry::sync
