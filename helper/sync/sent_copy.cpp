// The next sent copy from the previous one plus the delta: see sent_copy.hpp.
#include "helper/sync/sent_copy.hpp"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/dir_at.hpp"
#include "common/file_times.hpp"
#include "common/open_file.hpp"
#include "common/temp_name.hpp"
#include "common/unique_fd.hpp"
#include "helper/sync/patch_file.hpp"

namespace ferry::sync {

std::expected<PendingSentCopy, std::string> PendingSentCopy::build(const std::filesystem::path& old_copy,
                                                                   const std::filesystem::path& new_copy,
                                                                   std::span<const std::uint8_t> delta,
                                                                   const ferry::delta::Hash128& new_hash, std::uint64_t new_size,
                                                                   ferry::posix::RangeCopier::KernelCopy kernel_copy) {
  const posix::UniqueFd old_fd(posix::open_file_nofollow(old_copy, O_RDONLY));
  if (!old_fd) return std::unexpected("open " + old_copy.string() + ": " + std::strerror(errno));
  posix::FileStat st;
  if (posix::stat_fd(old_fd.get(), st) != 0 || st.kind != posix::FileKind::regular) return std::unexpected(old_copy.string() + " is not a regular file");
  PendingSentCopy p;
  p.target_ = new_copy;
  p.temp_ = new_copy.parent_path() / posix::temp_name(new_copy.filename().string());
  p.fd_ = posix::open_file_nofollow(p.temp_, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (p.fd_ < 0) {
    p.temp_.clear();
    return std::unexpected("create a temp file in " + new_copy.parent_path().string() + ": " + std::strerror(errno));
  }
  auto patched = patch_to_fd(delta, old_fd.get(), st.size, p.fd_,
                             ferry::delta::DeltaHeader{st.size, new_size, new_hash},
                             std::move(kernel_copy));
  if (!patched) return std::unexpected(patched.error());  // the destructor removes the temp file
  return p;
}

PendingSentCopy::PendingSentCopy(PendingSentCopy&& o) noexcept
    : temp_(std::exchange(o.temp_, {})), target_(std::move(o.target_)), fd_(std::exchange(o.fd_, -1)) {}

PendingSentCopy::~PendingSentCopy() {
  if (fd_ >= 0) posix::close_fd(fd_);
  std::error_code ec;
  if (!temp_.empty()) std::filesystem::remove(temp_, ec);
}

std::expected<void, std::string> PendingSentCopy::commit() {
  if (fd_ < 0 || temp_.empty()) return std::unexpected(std::string("nothing to commit"));
  if (posix::sync_fd(fd_) != 0) return std::unexpected("fsync " + temp_.string() + ": " + std::strerror(errno));
  std::error_code ec;
  std::filesystem::rename(temp_, target_, ec);
  if (ec) return std::unexpected("rename into " + target_.string() + ": " + ec.message());
  temp_.clear();
  posix::close_fd(std::exchange(fd_, -1));
  return {};
}

}  // namespace ferry::sync
