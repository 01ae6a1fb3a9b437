// sync/readDelta's work on the agent: see read_delta.hpp.
#include "remote-runtime/agent/sync/read_delta.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>

#include "common/file_times.hpp"
#include "common/full_io.hpp"
#include "common/unique_fd.hpp"

namespace ferry::agent::sync {
namespace {

namespace delta = ferry::delta;

using ferry::posix::ctime_of;
using ferry::posix::mtime_of;

WriteError bad(std::string message) { return WriteError{WriteErrc::bad_delta, std::move(message)}; }

// The coarse delta of a two-level pull's first request, kept for its second: the same file
// (device, inode, size, mtime, ctime) against the same signature gives the same coarse delta, so
// the 1 MiB-block match over the whole file runs once, not twice. Small: a coarse delta that
// leaves ranges to refine is mostly COPY ops.
struct CoarseKey {
  dev_t dev;
  ino_t ino;
  std::int64_t size, mtime_ns, ctime_ns;
  Hash128 signature;
  bool operator==(const CoarseKey&) const = default;
};
std::mutex coarse_mu;
std::deque<std::pair<CoarseKey, std::vector<std::uint8_t>>> coarse_cache;
constexpr std::size_t kCoarseCacheEntries = 8;

}  // namespace

std::expected<ReadDeltaResult, WriteError> read_delta(const std::filesystem::path& file, const ReadDeltaRequest& req) {
  const ferry::posix::UniqueFd held(::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  const int fd = held.get();
  if (fd < 0) {
    const int err = errno;
    return std::unexpected(WriteError{err == ENOENT ? WriteErrc::not_found : err == ELOOP ? WriteErrc::wrong_kind : WriteErrc::io,
                                      std::string("open: ") + std::strerror(err)});
  }
  struct stat before {};
  if (::fstat(fd, &before) != 0) return std::unexpected(WriteError{WriteErrc::io, std::string("fstat: ") + std::strerror(errno)});
  if (!S_ISREG(before.st_mode)) return std::unexpected(WriteError{WriteErrc::wrong_kind, "not a regular file"});
  if (static_cast<std::uint64_t>(before.st_size) > req.max_file) {
    ReadDeltaResult big;
    big.size = static_cast<std::uint64_t>(before.st_size);
    big.mtime_ns = mtime_of(before);
    big.mode = static_cast<std::uint32_t>(before.st_mode & 07777);
    big.too_big = true;
    return big;
  }
  std::vector<std::uint8_t> data(static_cast<std::size_t>(before.st_size));
  const ssize_t n = ferry::posix::pread_full(fd, data.data(), data.size(), 0);
  if (n < 0) return std::unexpected(WriteError{WriteErrc::io, std::string("read: ") + std::strerror(errno)});
  if (static_cast<std::size_t>(n) < data.size()) return std::unexpected(WriteError{WriteErrc::io, "changed while being read (shrank)"});
  struct stat after {};
  if (::fstat(fd, &after) != 0 || after.st_size != before.st_size || mtime_of(after) != mtime_of(before))
    return std::unexpected(WriteError{WriteErrc::io, "changed while being read"});

  ReadDeltaResult out;
  out.size = data.size();
  out.mtime_ns = mtime_of(before);
  out.mode = static_cast<std::uint32_t>(before.st_mode & 07777);
  out.hash = delta::hash128(data);

  auto sig = delta::SignatureView::parse(req.signature);
  if (!sig) return std::unexpected(bad("signature: " + sig.error().message));
  const CoarseKey key{before.st_dev, before.st_ino, static_cast<std::int64_t>(before.st_size), mtime_of(before),
                      ctime_of(before),
                      delta::hash128(req.signature)};
  std::vector<std::uint8_t> coarse;
  if (!req.fine.empty()) {
    std::lock_guard lock(coarse_mu);
    for (auto it = coarse_cache.begin(); it != coarse_cache.end(); ++it)
      if (it->first == key) {
        coarse = std::move(it->second);
        coarse_cache.erase(it);
        break;
      }
  }
  std::expected<delta::DeltaStats, delta::DeltaError> stats = delta::DeltaStats{};
  if (coarse.empty()) stats = delta::generate_delta(*sig, data, coarse);
  if (!stats) return std::unexpected(bad("delta: " + stats.error().message));

  auto finish = [&](std::vector<std::uint8_t> d, delta::DeltaStats s) -> std::expected<ReadDeltaResult, WriteError> {
    if (d.size() > req.max_delta) {
      out.too_big = true;
      return std::move(out);
    }
    out.delta = std::move(d);
    out.stats = s;
    return std::move(out);
  };

  if (!req.fine.empty()) {
    std::vector<delta::SignatureView> views;
    for (const Bytes& f : req.fine) {
      auto v = delta::SignatureView::parse(f);
      if (!v) return std::unexpected(bad("fine signature: " + v.error().message));
      if (v->file_size() != sig->file_size()) return std::unexpected(bad("fine signature of another base size"));
      views.push_back(*v);
    }
    std::vector<std::uint8_t> refined;
    auto rs = delta::refine_delta(coarse, views, data, refined);
    if (!rs) return std::unexpected(bad("refine: " + rs.error().message));
    return finish(std::move(refined), *rs);
  }
  if (req.ranges_only) {
    auto ranges = delta::unreferenced_base_ranges(coarse);
    if (!ranges) return std::unexpected(bad("ranges: " + ranges.error().message));
    std::uint64_t unmatched = 0;
    for (const auto& r : *ranges) unmatched += r.length;
    // As push decides: nothing left to refine, or so little matched that fine signatures would
    // cost more than they save, and the coarse delta goes as it is.
    if (!ranges->empty() && unmatched <= sig->file_size() / 4 && ranges->size() <= req.max_ranges) {
      out.ranges = std::move(*ranges);
      std::lock_guard lock(coarse_mu);
      if (coarse_cache.size() >= kCoarseCacheEntries) coarse_cache.pop_front();
      coarse_cache.emplace_back(key, std::move(coarse));
      return out;
    }
  }
  return finish(std::move(coarse), *stats);
}

}  // namespace ferry::agent::sync
