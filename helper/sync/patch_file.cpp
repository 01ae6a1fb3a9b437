// Applying a pulled delta to a local file: see patch_file.hpp.
#include "helper/sync/patch_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/full_io.hpp"

namespace ferry::sync {
namespace {

constexpr std::size_t kIoBlock = 1u << 20;

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

std::expected<ferry::delta::DeltaStats, std::string> patch_to_fd(std::span<const std::uint8_t> d, int base_fd,
                                                                 std::uint64_t base_size, int out_fd,
                                                                 const ferry::delta::DeltaHeader& expect,
                                                                 ferry::posix::RangeCopier::KernelCopy kernel_copy) {
  namespace delta = ferry::delta;
  auto reader = delta::DeltaReader::open(d);
  if (!reader) return std::unexpected("delta: " + reader.error().message);
  const auto& h = reader->header();
  if (h.base_size != base_size) return std::unexpected(std::string("delta: made against another base size"));
  if (h.output_size != expect.output_size || h.output_hash != expect.output_hash)
    return std::unexpected(std::string("delta: its header disagrees with the file the agent described"));
  delta::DeltaStats stats;
  delta::Hash128Stream hash;
  ferry::posix::RangeCopier copier(std::move(kernel_copy));
  std::uint64_t out_at = 0;
  std::vector<std::uint8_t> buf;
  for (;;) {
    auto op = reader->next();
    if (!op) return std::unexpected("delta: " + op.error().message);
    if (!*op) break;
    const delta::DeltaOp& o = **op;
    if (o.length > h.output_size - out_at) return std::unexpected(std::string("delta: output beyond the declared size"));
    if (o.kind == delta::DeltaOp::Kind::literal) {
      if (ferry::posix::pwrite_full(out_fd, o.data.data(), o.data.size(), out_at) < 0) return std::unexpected(errno_text("write"));
      hash.update(o.data);
      out_at += o.data.size();
      stats.literal_bytes += o.data.size();
      ++stats.literal_ops;
      continue;
    }
    if (o.offset > base_size || o.length > base_size - o.offset) return std::unexpected(std::string("delta: a copy outside the base"));
    // Each piece hashed from a read of the base, and copied by the kernel: the bytes are not
    // written from user space (on btrfs/xfs not written at all: the extents are shared).
    buf.resize(static_cast<std::size_t>(std::min<std::uint64_t>(o.length, kIoBlock)));
    for (std::uint64_t done = 0; done < o.length;) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), o.length - done));
      const ssize_t got = ferry::posix::pread_full(base_fd, buf.data(), n, o.offset + done);
      if (got < 0) return std::unexpected(errno_text("read"));
      if (static_cast<std::size_t>(got) != n) return std::unexpected(std::string("the local file shrank during the pull"));
      const ssize_t copied = copier.copy(base_fd, o.offset + done, out_fd, out_at, n);
      if (copied < 0) return std::unexpected(errno_text("copy"));
      if (static_cast<std::size_t>(copied) != n) return std::unexpected(std::string("the local file shrank during the pull"));
      hash.update(delta::Bytes(buf.data(), n));
      out_at += n;
      done += n;
    }
    stats.copied_bytes += o.length;
    ++stats.copy_ops;
  }
  if (out_at != h.output_size) return std::unexpected(std::string("delta: output shorter than declared"));
  if (hash.digest() != h.output_hash) return std::unexpected(std::string("delta: the result does not hash to the declared value"));
  return stats;
}

}  // namespace ferry::sync
