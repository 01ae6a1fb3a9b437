// The sync-state record: see sync_generation.hpp. One line, "ferry-sync-state 1 <epoch> <n>".
#include "remote-runtime/agent/sync/sync_generation.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <random>

#include "common/full_io.hpp"
#include "common/private_files.hpp"
#include "common/unique_fd.hpp"

namespace ferry::agent::sync {
namespace {

constexpr std::string_view kMagic = "ferry-sync-state 1 ";

using ferry::posix::UniqueFd;

std::unexpected<WriteError> io_fail(const std::string& what) {
  const int e = errno;
  return std::unexpected(WriteError{e == ENOSPC || e == EDQUOT ? WriteErrc::no_space : WriteErrc::io, what + ": " + std::strerror(e)});
}

std::string new_epoch() {
  std::random_device rd;
  char hex[33];
  std::snprintf(hex, sizeof hex, "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  return hex;
}

SyncGeneration parse(std::string_view text) {
  SyncGeneration g;
  if (!text.starts_with(kMagic)) return g;
  text.remove_prefix(kMagic.size());
  if (text.size() < 34 || text[32] != ' ') return g;
  std::string epoch(text.substr(0, 32));
  if (epoch.find_first_not_of("0123456789abcdef") != std::string::npos) return g;
  text.remove_prefix(33);
  std::uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end == text.data() || end == text.data() + text.size() || *end != '\n') return g;
  g.epoch = std::move(epoch);
  g.generation = n;
  return g;
}

// The record is one short line: more than a few KiB is not one, and parses as none.
std::string read_all(int fd) {
  std::string out(4352, '\0');
  const ssize_t n = ferry::posix::pread_full(fd, out.data(), out.size(), 0);
  out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return out;
}

// A file in .ferry, opened without following a symlink at either component.
std::expected<int, WriteError> open_state(FileWriter& writer, bool create, std::string_view name = kSyncStateFile) {
  if (create) {
    if (auto made = writer.make_dirs(kSyncStateDir, 0700); !made) return std::unexpected(made.error());
  }
  const UniqueFd root(::open(writer.root().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) return io_fail("open " + writer.root().string());
  const UniqueFd dir(::openat(root.get(), std::string(kSyncStateDir).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) {
    if (errno == ENOENT && !create) return -1;
    return io_fail("open .ferry");
  }
  if (create) ferry::posix::make_private(dir.get());  // an older ferry made it 0755
  int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0);
  int fd = ::openat(dir.get(), std::string(name).c_str(), flags, 0600);
  if (fd < 0) {
    if (errno == ENOENT && !create) return -1;
    return io_fail("open .ferry/" + std::string(name));
  }
  return fd;
}

}  // namespace

std::expected<SyncGeneration, WriteError> read_generation(FileWriter& writer) {
  auto fd = open_state(writer, false);
  if (!fd) return std::unexpected(fd.error());
  if (*fd < 0) return SyncGeneration{};
  const UniqueFd f(*fd);
  ::flock(f.get(), LOCK_SH);
  return parse(read_all(f.get()));
}

std::expected<SyncGeneration, WriteError> bump_generation(FileWriter& writer) {
  auto fd = open_state(writer, true);
  if (!fd) return std::unexpected(fd.error());
  const UniqueFd f(*fd);
  if (::flock(f.get(), LOCK_EX) != 0) return io_fail("lock .ferry/sync-state");
  SyncGeneration g = parse(read_all(f.get()));
  if (g.epoch.empty()) g.epoch = new_epoch();
  ++g.generation;
  // Rewritten in place (the lock is on this inode). Synced like the writes it counts: a lost
  // bump could later let another writer's bump land on a count a helper already holds. A torn
  // line reads as a new epoch, which only makes the helper list once.
  std::string line = std::string(kMagic) + g.epoch + " " + std::to_string(g.generation) + "\n";
  if (ferry::posix::pwrite_full(f.get(), line.data(), line.size(), 0) < 0) return io_fail("write .ferry/sync-state");
  if (::ftruncate(f.get(), static_cast<off_t>(line.size())) != 0) return io_fail("truncate .ferry/sync-state");
  ::fdatasync(f.get());
  return g;
}

UniqueFd enter_write_gate(FileWriter& writer) {
  auto fd = open_state(writer, true, kWriteGateFile);
  if (!fd || *fd < 0) return UniqueFd();
  UniqueFd gate(*fd);
  int rc;
  while ((rc = ::flock(gate.get(), LOCK_SH)) != 0 && errno == EINTR) {
  }
  return rc == 0 ? std::move(gate) : UniqueFd();
}

bool wait_for_writers(FileWriter& writer, std::chrono::milliseconds cap) {
  auto fd = open_state(writer, false, kWriteGateFile);
  if (!fd || *fd < 0) return true;  // no gate: nothing ever wrote here through one
  const UniqueFd gate(*fd);
  // Polled, not a blocking LOCK_EX: a writer that never lets go (another helper's endless
  // stream of batches) must cost this push a bounded wait, not all of it.
  const auto deadline = std::chrono::steady_clock::now() + cap;
  while (::flock(gate.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    ::usleep(2000);
  }
  ::flock(gate.get(), LOCK_UN);
  return true;
}

}  // namespace ferry::agent::sync
