// sync/readDelta's work on the agent: see read_delta.hpp.
#include "remote-runtime/agent/sync/read_delta.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <atomic>
#include <deque>
#include <future>
#include <mutex>
#include <string>

#include "common/full_io.hpp"
#include "common/mapped_file.hpp"
#include "common/posix/stat_times.hpp"
#include "common/unique_fd.hpp"
#include "protocol/delta/patch.hpp"
#include "remote-runtime/agent/sync/hash_cache.hpp"

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
// With it, the file's hash from the first request's read: the second request then reads nothing
// (refine_delta only looks at the coarse delta's literal runs, and those bytes travel in the
// coarse delta itself).
struct CoarseEntry {
  CoarseKey key;
  std::vector<std::uint8_t> coarse;
  Hash128 file_hash;
};
std::mutex coarse_mu;
std::deque<CoarseEntry> coarse_cache;
constexpr std::size_t kCoarseCacheEntries = 8;
// Where a delta's header holds the output's xxh3-128 (FORMAT.md: magic, version, flags, base and
// output sizes, then the hash).
constexpr std::size_t kHeaderHashAt = 24;

// The file's bytes, or only the ones a refinement looks at: an anonymous mapping, so pages
// never written cost nothing (no 1 GiB memset as a std::vector would do).
class FileImage {
 public:
  explicit FileImage(std::size_t n) : n_(std::max<std::size_t>(n, 1)) {
    p_ = ::mmap(nullptr, n_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p_ == MAP_FAILED) p_ = nullptr;
  }
  FileImage(const FileImage&) = delete;
  FileImage& operator=(const FileImage&) = delete;
  ~FileImage() {
    if (p_) ::munmap(p_, n_);
  }
  std::uint8_t* data() const { return static_cast<std::uint8_t*>(p_); }

 private:
  void* p_ = nullptr;
  std::size_t n_;
};

// Reads [0, size) into `into` on a second thread while this one hashes what has arrived: one
// pass over the file, the copy and the hash side by side.
std::expected<Hash128, WriteError> read_hashing(int fd, std::uint8_t* into, std::size_t size) {
  constexpr std::size_t kPiece = 4u << 20;
  std::atomic<std::size_t> ready{0};
  std::atomic<int> failed{0};  // errno, or -1: the file ended early
  auto reader = std::async(std::launch::async, [&] {
    for (std::size_t at = 0; at < size;) {
      const std::size_t want = std::min(kPiece, size - at);
      const ssize_t n = ferry::posix::pread_full(fd, into + at, want, at);
      if (n < 0 || static_cast<std::size_t>(n) < want) failed.store(n < 0 ? errno : -1);
      if (failed.load() != 0) break;
      at += want;
      ready.store(at, std::memory_order_release);
      ready.notify_one();
    }
    ready.store(size + 1, std::memory_order_release);  // done (size + 1: never a count)
    ready.notify_one();
  });
  delta::Hash128Stream h;
  for (std::size_t hashed = 0;;) {
    const std::size_t r = ready.load(std::memory_order_acquire);
    if (r == hashed) {
      ready.wait(r);
      continue;
    }
    const std::size_t upto = std::min(r, size);
    h.update(Bytes(into + hashed, upto - hashed));
    hashed = upto;
    if (r > size) break;
  }
  reader.get();
  if (const int e = failed.load(); e > 0) return std::unexpected(WriteError{WriteErrc::io, std::string("read: ") + std::strerror(e)});
  if (failed.load() < 0) return std::unexpected(WriteError{WriteErrc::io, "changed while being read (shrank)"});
  return h.digest();
}

// The literal runs of `coarse` written where they belong in `into` (output offsets).
std::expected<void, WriteError> place_literals(Bytes coarse, std::uint8_t* into, std::size_t size) {
  auto reader = delta::DeltaReader::open(coarse);
  if (!reader) return std::unexpected(bad("cached delta: " + reader.error().message));
  std::uint64_t at = 0;
  for (;;) {
    auto op = reader->next();
    if (!op) return std::unexpected(bad("cached delta: " + op.error().message));
    if (!*op) return {};
    if ((*op)->length > size - at) return std::unexpected(bad("cached delta longer than the file"));
    if ((*op)->kind == delta::DeltaOp::Kind::literal) std::memcpy(into + at, (*op)->data.data(), (*op)->data.size());
    at += (*op)->length;
  }
}

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
  const auto size = static_cast<std::size_t>(before.st_size);
  auto sig = delta::SignatureView::parse(req.signature);
  if (!sig) return std::unexpected(bad("signature: " + sig.error().message));
  const CoarseKey key{before.st_dev, before.st_ino, static_cast<std::int64_t>(before.st_size), mtime_of(before),
                      ctime_of(before),
                      delta::hash128(req.signature)};
  std::vector<std::uint8_t> coarse;
  std::optional<Hash128> file_hash;
  if (!req.fine.empty()) {
    std::lock_guard lock(coarse_mu);
    for (auto it = coarse_cache.begin(); it != coarse_cache.end(); ++it)
      if (it->key == key) {
        coarse = std::move(it->coarse);
        file_hash = it->file_hash;
        coarse_cache.erase(it);
        break;
      }
  }
  std::expected<delta::DeltaStats, delta::DeltaError> stats = delta::DeltaStats{};
  const std::int64_t read_began = realtime_ns();
  // The first (or only) request: the coarse delta from one sequential read, hashed on the way
  // unless the listing just hashed this very file.
  const bool streamed = !file_hash && req.fine.empty();
  if (streamed) {
    const delta::ReadAt read_at = [fd](std::uint64_t at, std::uint8_t* buf, std::size_t n) { return ferry::posix::pread_full(fd, buf, n, at); };
    auto got = delta::generate_delta_streamed(*sig, read_at, size, coarse, known_hash(before));
    if (!got && got.error().code == delta::DeltaErrc::truncated) return std::unexpected(WriteError{WriteErrc::io, "changed while being read (shrank)"});
    if (!got && got.error().code == delta::DeltaErrc::sink_failed) return std::unexpected(WriteError{WriteErrc::io, got.error().message});
    if (!got) return std::unexpected(bad("delta: " + got.error().message));
    file_hash = got->hash;
    stats = got->stats;
  }
  // A refining request needs the bytes at the coarse delta's literals: placed from the cached
  // coarse delta, or (not cached: evicted, another agent) the whole file again, from a mapping
  // (no copy; a truncation meanwhile reads zeros and is caught below), else read into memory.
  std::optional<ferry::posix::MappedFile> mapped;
  std::optional<FileImage> image;
  std::future<Hash128> hashing;  // the mapped file's hash, beside the coarse match
  if (!file_hash && !streamed) {
    if (auto m = ferry::posix::MappedFile::map(fd); m && m->size() == size) {
      mapped.emplace(std::move(*m));
      // The listing just before (a pull's) usually hashed this very file: not read twice.
      if (auto known = known_hash(before)) file_hash = *known;
      else hashing = std::async(std::launch::async, [b = mapped->bytes()] { return delta::hash128(b); });
    }
  }
  if (!mapped && !streamed) {
    image.emplace(size);
    if (!image->data()) return std::unexpected(WriteError{WriteErrc::io, std::string("cannot allocate for the file: ") + std::strerror(errno)});
    if (file_hash) {
      // Unchanged since the first request (same inode, size, mtime and ctime): its literal runs are
      // all the refinement reads.
      if (auto ok = place_literals(coarse, image->data(), size); !ok) return std::unexpected(ok.error());
    } else {
      auto h = read_hashing(fd, image->data(), size);
      if (!h) return std::unexpected(h.error());
      file_hash = *h;
    }
  }
  const Bytes data = mapped ? mapped->bytes() : image ? Bytes(image->data(), size) : Bytes();
  // Against a mapping the header's hash is filled in once the hashing thread is done.
  if (coarse.empty() && !streamed) stats = delta::generate_delta(*sig, data, coarse, file_hash.value_or(Hash128{}));
  if (hashing.valid()) {
    file_hash = hashing.get();
    if (stats) std::copy(file_hash->begin(), file_hash->end(), coarse.begin() + kHeaderHashAt);
  }
  struct stat after {};
  if ((mapped && mapped->truncated()) || ::fstat(fd, &after) != 0 || after.st_size != before.st_size ||
      mtime_of(after) != mtime_of(before) || ctime_of(after) != ctime_of(before))
    return std::unexpected(WriteError{WriteErrc::io, "changed while being read"});
  remember_hash(before, after, read_began, *file_hash);

  ReadDeltaResult out;
  out.size = size;
  out.mtime_ns = mtime_of(before);
  out.mode = static_cast<std::uint32_t>(before.st_mode & 07777);
  out.hash = *file_hash;

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
    auto rs = delta::refine_delta(coarse, views, data, refined, out.hash);
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
      coarse_cache.push_back(CoarseEntry{key, std::move(coarse), out.hash});
      return out;
    }
  }
  return finish(std::move(coarse), *stats);
}

}  // namespace ferry::agent::sync
