// The agent's whole-file hash cache: see hash_cache.hpp.
#include "remote-runtime/agent/sync/hash_cache.hpp"

#include <deque>
#include <mutex>

#include "common/posix/stat_times.hpp"

namespace ferry::agent::sync {
namespace {

struct Stamp {
  dev_t dev;
  ino_t ino;
  std::int64_t size, mtime_ns, ctime_ns;
  bool operator==(const Stamp&) const = default;
};

Stamp stamp_of(const struct stat& st) {
  return Stamp{st.st_dev, st.st_ino, static_cast<std::int64_t>(st.st_size), posix::mtime_of(st), posix::ctime_of(st)};
}

struct Entry {
  Stamp stamp;
  delta::Hash128 hash;
};

constexpr std::size_t kEntries = 32;
std::mutex mu;
std::deque<Entry> entries;  // newest last

}  // namespace

std::int64_t realtime_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::optional<delta::Hash128> known_hash(const struct stat& st) {
  if (!S_ISREG(st.st_mode) || static_cast<std::uint64_t>(st.st_size) < kHashCacheMinSize) return std::nullopt;
  const Stamp s = stamp_of(st);
  std::lock_guard lock(mu);
  for (const Entry& e : entries)
    if (e.stamp == s) return e.hash;
  return std::nullopt;
}

void remember_hash(const struct stat& before, const struct stat& after, std::int64_t read_began_ns, const delta::Hash128& hash) {
  if (!S_ISREG(before.st_mode) || static_cast<std::uint64_t>(before.st_size) < kHashCacheMinSize) return;
  const Stamp s = stamp_of(before);
  if (!(stamp_of(after) == s) || read_began_ns - s.ctime_ns < std::chrono::nanoseconds(kSettle).count()) return;
  std::lock_guard lock(mu);
  std::erase_if(entries, [&](const Entry& e) { return e.stamp.dev == s.dev && e.stamp.ino == s.ino; });
  if (entries.size() >= kEntries) entries.pop_front();
  entries.push_back(Entry{s, hash});
}

}  // namespace ferry::agent::sync
