// A pulled delta (the agent's, hostile until checked) applied to the local copy of a file into a
// temp file: what `ferry pull` does with a big file the box changed a little. The unchanged
// ranges go from the local file to the temp file in the kernel (RangeCopier: a reflink on
// btrfs/xfs, else copy_file_range, else read/write); every output byte is hashed once against
// the delta's declared whole-file xxh3-128, on a second thread while the first writes.
#pragma once

#include <atomic>
#include <cstdint>
#include <expected>
#include <future>
#include <span>
#include <string>

#include "common/copy_range.hpp"
#include "protocol/delta/delta.hpp"
#include "protocol/delta/patch.hpp"

namespace ferry::sync {

// Writes `delta` applied to `base_fd` (base_size bytes) into `out_fd` from offset 0. The header
// must agree with `expect` (base size, output size and hash, as the agent described the file);
// COPYs must lie inside the base; the output must be exactly its declared size and hash to the
// declared value. The base is read with pread only (never mapped: a local file truncated by
// someone else meanwhile is then an error, not a SIGBUS). `kernel_copy` replaces
// copy_file_range(2) in tests. With `out_holds_base`, `out_fd` already holds a copy of the base
// (made while the delta was on its way, see BaseCopy): a COPY that leaves its bytes where they
// are is not written again, and is hashed from `out_fd`, so a copy that differs from the base
// fails the hash.
std::expected<ferry::delta::DeltaStats, std::string> patch_to_fd(std::span<const std::uint8_t> delta, int base_fd,
                                                                 std::uint64_t base_size, int out_fd,
                                                                 const ferry::delta::DeltaHeader& expect,
                                                                 ferry::posix::RangeCopier::KernelCopy kernel_copy = {},
                                                                 bool out_holds_base = false);

// The whole base copied into the (empty) output file on a thread of its own, started before the
// delta is asked for: an edit that keeps a file's size leaves most of it in place, so the copy
// then overlaps the round trips instead of following them. ready() waits and says whether the
// copy is whole and the base did not change while it was read; destruction stops and waits.
class BaseCopy {
 public:
  BaseCopy(int base_fd, int out_fd, std::uint64_t size);
  ~BaseCopy();
  BaseCopy(const BaseCopy&) = delete;
  BaseCopy& operator=(const BaseCopy&) = delete;
  bool ready();

 private:
  std::atomic<bool> stop_{false};
  std::future<bool> done_;
};

}  // namespace ferry::sync
