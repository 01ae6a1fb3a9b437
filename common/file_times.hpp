// A struct stat's times as nanoseconds since the epoch (the unit of every manifest and wire
// field), and back to a timespec for futimens; whether two stats show one file unchanged.
#pragma once

#include <sys/stat.h>
#include <time.h>

#include <cstdint>

namespace ferry::posix {

inline std::int64_t mtime_of(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

inline std::int64_t ctime_of(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec;
}

// The same file, unchanged between the two stats: what any write or rename changes (device, inode,
// size, mtime, ctime). Two writes in one clock tick can still leave all five alike.
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

}  // namespace ferry::posix
