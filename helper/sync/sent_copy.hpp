// The next sent copy (.ferry/sent/<hash>: the helper's copy of what the remote holds, the base of
// the next delta) built from the previous one and the delta just sent, instead of being written
// whole from the new file: the unchanged ranges are copied in the kernel (a reflink on btrfs/xfs:
// nothing written), and the result is checked against the new hash. Built into a temp file while
// the agent applies the same delta, renamed into place only once the agent said yes; dropped
// otherwise. A copy's name is its content's hash at every instant: the old copy is never
// modified, the new one appears whole or not at all.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <span>
#include <string>

#include "common/copy_range.hpp"
#include "protocol/delta/delta_types.hpp"

namespace ferry::sync {

class PendingSentCopy {
 public:
  // `delta` turns `old_copy` into the file of `new_hash` and `new_size`, whose copy goes to
  // `new_copy` on commit(). Fails (nothing left behind) when the delta does not apply or its
  // result does not hash to `new_hash`.
  static std::expected<PendingSentCopy, std::string> build(const std::filesystem::path& old_copy, const std::filesystem::path& new_copy,
                                                           std::span<const std::uint8_t> delta, const ferry::delta::Hash128& new_hash,
                                                           std::uint64_t new_size,
                                                           ferry::posix::RangeCopier::KernelCopy kernel_copy = {});
  PendingSentCopy(PendingSentCopy&& o) noexcept;
  PendingSentCopy& operator=(PendingSentCopy&&) = delete;
  PendingSentCopy(const PendingSentCopy&) = delete;
  ~PendingSentCopy();  // removes the temp file unless committed

  // fsync, then rename into place.
  std::expected<void, std::string> commit();

 private:
  PendingSentCopy() = default;
  std::filesystem::path temp_, target_;
  int fd_ = -1;
};

}  // namespace ferry::sync
