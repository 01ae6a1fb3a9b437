// Owner-only files and directories of ferry's own, on POSIX: see private_files.hpp.
#include "common/private_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "common/posix/private_at.hpp"
#include "common/unique_fd.hpp"

namespace ferry::posix {
namespace fs = std::filesystem;

namespace {
constexpr mode_t kPrivateDirMode = 0700;
constexpr mode_t kPrivateFileMode = 0600;
}  // namespace

std::error_code make_private(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return {errno, std::generic_category()};
  const mode_t want = S_ISDIR(st.st_mode) ? kPrivateDirMode : kPrivateFileMode;
  if ((st.st_mode & 07777) == want) return {};
  // Someone else's file (root's state read by a user) is not ours to change.
  if (st.st_uid != ::geteuid()) return {};
  if (::fchmod(fd, want) != 0) return {errno, std::generic_category()};
  return {};
}

std::error_code make_private_dirs(const fs::path& dir) {
  if (dir.empty()) return std::make_error_code(std::errc::invalid_argument);
  // The missing tail, deepest first, as create_directories would make it.
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path p = dir.lexically_normal(); !p.empty(); p = p.parent_path()) {
    if (p.filename().empty() && p.has_relative_path()) continue;  // "a/b/": the trailing ""
    if (fs::exists(fs::symlink_status(p, ec))) break;
    missing.push_back(p);
    if (p.parent_path() == p) break;
  }
  // Each made exactly 0700 before the next goes in (mkdir honours the umask, which could leave it
  // unwritable), and `dir` too, however old.
  auto narrow = [](const fs::path& p) -> std::error_code {
    UniqueFd fd(::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd) return {errno, std::generic_category()};
    return make_private(fd.get());
  };
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), kPrivateDirMode) != 0 && errno != EEXIST) return {errno, std::generic_category()};
    if (auto e = narrow(*it)) return e;
  }
  return missing.empty() ? narrow(dir) : std::error_code{};
}

int open_private_at(int dir_fd, const char* name, int flags) {
  const int fd = ::openat(dir_fd, name, flags | O_CREAT | O_NOFOLLOW | O_CLOEXEC, kPrivateFileMode);
  if (fd < 0) return -1;
  if (auto e = make_private(fd)) {
    ::close(fd);
    errno = e.value();
    return -1;
  }
  return fd;
}

int open_private(const fs::path& path, int flags) { return open_private_at(AT_FDCWD, path.c_str(), flags); }

}  // namespace ferry::posix
