// Whole-file hashes the agent took, kept for the requests that follow on the same file: a pull's
// listing hashes a changed checkpoint, then its sync/readDelta would read and hash it again
// (~0.2 s per GiB). Only big files; keyed by what any write changes (device, inode, size, mtime,
// ctime). A hash whose read began within kSettle of the file's ctime is not kept: a second write
// in the same clock tick (timestamps move by the kernel's tick, 1-10 ms) could leave all five
// as they were.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <optional>

#include "protocol/delta/delta_types.hpp"

namespace ferry::agent::sync {

inline constexpr std::uint64_t kHashCacheMinSize = 1u << 20;
inline constexpr std::chrono::milliseconds kSettle{100};

// The hash remembered for the file `st` describes, if any.
std::optional<delta::Hash128> known_hash(const struct stat& st);
// `hash` of the file `before` described, read from `read_began_ns` on (CLOCK_REALTIME, as file
// times); kept only when `after` (its stat once read) shows the same file.
void remember_hash(const struct stat& before, const struct stat& after, std::int64_t read_began_ns, const delta::Hash128& hash);
// CLOCK_REALTIME now, in ns (what remember_hash's read_began_ns is measured in).
std::int64_t realtime_ns();

}  // namespace ferry::agent::sync
