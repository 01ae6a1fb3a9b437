// The next sent copy from the previous one plus the delta: see sent_copy.hpp.
#include "helper/sync/sent_copy.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/temp_name.hpp"
#include "common/unique_fd.hpp"
#include "helper/sync/patch_file.hpp"

namespace ferry::sync {

std::expected<PendingSentCopy, std::string> PendingSentCopy::build(const std::filesystem::path& old_copy,
                                                                   const std::filesystem::path& new_copy,
                                                                   std::span<const std::uint8_t> delta,
                                                                   const ferry::delta::Hash128& new_hash, std::uint64_t new_size,
                                                                   ferry::posix::RangeCopier::KernelCopy kernel_copy) {
  const posix::UniqueFd old_fd(::open(old_copy.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!old_fd) return std::unexpected("open " + old_copy.string() + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(old_fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::unexpected(old_copy.string() + " is not a regular file");
  PendingSentCopy p;
  p.target_ = new_copy;
  p.temp_ = new_copy.parent_path() / posix::temp_name(new_copy.filename().string());
  p.fd_ = ::open(p.temp_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (p.fd_ < 0) {
    p.temp_.clear();
    return std::unexpected("create a temp file in " + new_copy.parent_path().string() + ": " + std::strerror(errno));
  }
  auto patched = patch_to_fd(delta, old_fd.get(), static_cast<std::uint64_t>(st.st_size), p.fd_,
                             ferry::delta::DeltaHeader{static_cast<std::uint64_t>(st.st_size), new_size, new_hash},
                             std::move(kernel_copy));
  if (!patched) return std::unexpected(patched.error());  // the destructor removes the temp file
  return p;
}

PendingSentCopy::PendingSentCopy(PendingSentCopy&& o) noexcept
    : temp_(std::exchange(o.temp_, {})), target_(std::move(o.target_)), fd_(std::exchange(o.fd_, -1)) {}

PendingSentCopy::~PendingSentCopy() {
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

std::expected<void, std::string> PendingSentCopy::commit() {
  if (fd_ < 0 || temp_.empty()) return std::unexpected(std::string("nothing to commit"));
  if (::fsync(fd_) != 0) return std::unexpected("fsync " + temp_.string() + ": " + std::strerror(errno));
  if (::rename(temp_.c_str(), target_.c_str()) != 0) return std::unexpected("rename into " + target_.string() + ": " + std::strerror(errno));
  temp_.clear();
  ::close(std::exchange(fd_, -1));
  return {};
}

}  // namespace ferry::sync
