// A struct stat's times as nanoseconds since the epoch (the unit of every manifest and wire
// field), and back to a timespec for futimens.
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
