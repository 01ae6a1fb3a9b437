// POSIX only: a struct stat's times as nanoseconds since the epoch, and back to a timespec for
// futimens; a struct stat as the portable FileStat (common/file_times.hpp). For the code that
// works with struct stat directly (the agent, the helper's sync on POSIX).
#pragma once

#include <sys/stat.h>
#include <time.h>

#include <cstdint>

#include "common/file_times.hpp"

namespace ferry::posix {

inline std::int64_t mtime_of(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

inline std::int64_t ctime_of(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
}

// same_file_state of common/file_times.hpp, for two struct stats.
inline bool same_file_state(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino && a.st_size == b.st_size && mtime_of(a) == mtime_of(b) &&
         ctime_of(a) == ctime_of(b);
}

// Nanoseconds to a timespec with tv_nsec in [0, 1e9) also for times before 1970.
inline timespec to_timespec(std::int64_t ns) {
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
  if (ts.tv_nsec < 0) {
    ts.tv_nsec += 1'000'000'000;
    --ts.tv_sec;
  }
  return ts;
}

inline FileKind kind_of(mode_t mode) {
  if (S_ISREG(mode)) return FileKind::regular;
  if (S_ISDIR(mode)) return FileKind::directory;
  if (S_ISLNK(mode)) return FileKind::symlink;
  return FileKind::other;
}

inline FileStat file_stat_of(const struct stat& st) {
  return FileStat{kind_of(st.st_mode), static_cast<std::uint64_t>(st.st_size), mtime_of(st), ctime_of(st),
                  static_cast<std::uint32_t>(st.st_mode & 07777), static_cast<std::uint64_t>(st.st_dev),
                  static_cast<std::uint64_t>(st.st_ino)};
}

}  // namespace ferry::posix
