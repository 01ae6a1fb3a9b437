// Applying a pulled delta to a local file: see patch_file.hpp.
#include "helper/sync/patch_file.hpp"

#include <algorithm>
#include <atomic>
#include <future>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/dir_at.hpp"
#include "common/file_times.hpp"
#include "common/full_io.hpp"

namespace ferry::sync {
namespace {

constexpr std::size_t kIoBlock = 1u << 20;

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// The xxh3-128 of what `d` builds from the base (delta::hash_delta_output, reading with pread).
// The writing loop reports malformed deltas; this one just stops. With `in_place_fd` (else -1),
// COPYs that stay where they are are read from it instead.
std::expected<ferry::delta::Hash128, std::string> hash_output(std::span<const std::uint8_t> d, int base_fd, std::uint64_t base_size,
                                                              int in_place_fd, const std::atomic<bool>& stop) {
  int read_errno = 0;
  auto read = [&](std::uint64_t offset, ferry::delta::MutableBytes into, bool in_place) {
    const int from = in_place && in_place_fd >= 0 ? in_place_fd : base_fd;
    const ssize_t got = ferry::posix::pread_full(from, into.data(), into.size(), offset);
    read_errno = got < 0 ? errno : 0;
    return got == static_cast<ssize_t>(into.size());
  };
  auto h = ferry::delta::hash_delta_output(d, base_size, read, stop, kIoBlock);
  if (h) return *h;
  if (h.error().code != ferry::delta::DeltaErrc::sink_failed || stop.load()) return std::unexpected("delta: " + h.error().message);
  if (read_errno) return std::unexpected(std::string("read: ") + std::strerror(read_errno));
  return std::unexpected(std::string("the local file shrank during the pull"));
}

}  // namespace

std::expected<ferry::delta::DeltaStats, std::string> patch_to_fd(std::span<const std::uint8_t> d, int base_fd,
                                                                 std::uint64_t base_size, int out_fd,
                                                                 const ferry::delta::DeltaHeader& expect,
                                                                 ferry::posix::RangeCopier::KernelCopy kernel_copy,
                                                                 bool out_holds_base) {
  namespace delta = ferry::delta;
  auto reader = delta::DeltaReader::open(d);
  if (!reader) return std::unexpected("delta: " + reader.error().message);
  const auto& h = reader->header();
  if (h.base_size != base_size) return std::unexpected(std::string("delta: made against another base size"));
  if (h.output_size != expect.output_size || h.output_hash != expect.output_hash)
    return std::unexpected(std::string("delta: its header disagrees with the file the agent described"));
  // The output's hash on a second thread, from its sources (the delta's literals, preads of the
  // base), while this one writes literals and has the kernel copy the rest.
  std::atomic<bool> stop{false};
  std::future<std::expected<delta::Hash128, std::string>> hashed =
      std::async(std::launch::async, [&] { return hash_output(d, base_fd, base_size, out_holds_base ? out_fd : -1, stop); });
  struct Stop {
    std::atomic<bool>& flag;
    ~Stop() { flag = true; }
  } const stop_on_return{stop};
  delta::DeltaStats stats;
  ferry::posix::RangeCopier copier(std::move(kernel_copy));
  std::uint64_t out_at = 0;
  for (;;) {
    auto op = reader->next();
    if (!op) return std::unexpected("delta: " + op.error().message);
    if (!*op) break;
    const delta::DeltaOp& o = **op;
    if (o.length > h.output_size - out_at) return std::unexpected(std::string("delta: output beyond the declared size"));
    if (o.kind == delta::DeltaOp::Kind::literal) {
      if (ferry::posix::pwrite_full(out_fd, o.data.data(), o.data.size(), out_at) < 0) return std::unexpected(errno_text("write"));
      out_at += o.data.size();
      stats.literal_bytes += o.data.size();
      ++stats.literal_ops;
      continue;
    }
    if (o.offset > base_size || o.length > base_size - o.offset) return std::unexpected(std::string("delta: a copy outside the base"));
    if (out_holds_base && o.offset == out_at) {  // there already
      out_at += o.length;
      stats.copied_bytes += o.length;
      ++stats.copy_ops;
      continue;
    }
    // Not written from user space (on btrfs/xfs not written at all: the extents are shared).
    const ssize_t copied = copier.copy(base_fd, o.offset, out_fd, out_at, static_cast<std::size_t>(o.length));
    if (copied < 0) return std::unexpected(errno_text("copy"));
    if (static_cast<std::uint64_t>(copied) != o.length) return std::unexpected(std::string("the local file shrank during the pull"));
    out_at += o.length;
    stats.copied_bytes += o.length;
    ++stats.copy_ops;
  }
  if (out_at != h.output_size) return std::unexpected(std::string("delta: output shorter than declared"));
  if (out_holds_base && h.output_size < base_size && ferry::posix::truncate_fd(out_fd, h.output_size) != 0)
    return std::unexpected(errno_text("truncate"));
  auto digest = hashed.get();
  if (!digest) return std::unexpected(digest.error());
  if (*digest != h.output_hash) return std::unexpected(std::string("delta: the result does not hash to the declared value"));
  return stats;
}

BaseCopy::BaseCopy(int base_fd, int out_fd, std::uint64_t size) {
  done_ = std::async(std::launch::async, [this, base_fd, out_fd, size] {
    ferry::posix::FileStat before;
    if (ferry::posix::stat_fd(base_fd, before) != 0 || before.size != size) return false;
    ferry::posix::RangeCopier copier;
    return ferry::posix::copy_while_unchanged(base_fd, before, out_fd, stop_, copier);
  });
}

BaseCopy::~BaseCopy() {
  stop_ = true;
  if (done_.valid()) done_.wait();
}

bool BaseCopy::ready() { return done_.valid() && done_.get(); }

}  // namespace ferry::sync
