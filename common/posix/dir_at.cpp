// The calls relative to a directory descriptor on POSIX (see dir_at.hpp): the *at(2) calls with
// O_NOFOLLOW / AT_SYMLINK_NOFOLLOW and O_CLOEXEC.
#include "common/dir_at.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/posix/stat_times.hpp"

namespace ferry::posix {

UniqueFd open_dir_nofollow(int at, const std::string& rel) {
  // "." rather than dup(): a new open file description, so the listing has its own offset.
  if (rel.empty()) return UniqueFd(::openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return UniqueFd(::openat(at, rel.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

UniqueFd open_dir_path(const std::filesystem::path& path) {
  return UniqueFd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

int open_at(int dirfd, const std::string& rel, int flags, int mode) {
  return ::openat(dirfd, rel.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, static_cast<mode_t>(mode));
}

int stat_nofollow(int dirfd, const char* name, FileStat& out) {
  struct stat st {};
  out = {};
  if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno;
  out = file_stat_of(st);
  return 0;
}

std::optional<std::string> read_link_at(int dirfd, const char* name, std::size_t st_size) {
  // One byte more than lstat said: a target that grew since fills it, and is refused.
  std::string target(st_size + 1, '\0');
  const ssize_t n = ::readlinkat(dirfd, name, target.data(), target.size());
  if (n < 0 || static_cast<std::size_t>(n) >= target.size()) return std::nullopt;
  target.resize(static_cast<std::size_t>(n));
  return target;
}

int mkdir_at(int dirfd, const char* name, int mode) { return ::mkdirat(dirfd, name, static_cast<mode_t>(mode)); }
int unlink_at(int dirfd, const char* name) { return ::unlinkat(dirfd, name, 0); }
int rename_at(int from_dir, const char* from, int to_dir, const char* to) { return ::renameat(from_dir, from, to_dir, to); }
int symlink_at(const std::string& target, int dirfd, const char* name) { return ::symlinkat(target.c_str(), dirfd, name); }

int sync_fd(int fd) { return ::fsync(fd); }
int truncate_fd(int fd, std::uint64_t size) { return ::ftruncate(fd, static_cast<off_t>(size)); }
int chmod_fd(int fd, std::uint32_t mode) { return ::fchmod(fd, static_cast<mode_t>(mode)); }

}  // namespace ferry::posix
