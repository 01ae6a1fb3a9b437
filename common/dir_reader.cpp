// The no-follow directory reader; see dir_reader.hpp.
#include "common/dir_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace ferry::posix {

UniqueFd open_dir_nofollow(int at, const std::string& rel) {
  // "." rather than dup(): a new open file description, so the listing has its own offset.
  if (rel.empty()) return UniqueFd(::openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return UniqueFd(::openat(at, rel.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

int stat_nofollow(int dirfd, const char* name, struct stat& st) {
  if (::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) return 0;
  const int err = errno;
  st = {};
  return err;
}

std::optional<std::string> read_link_at(int dirfd, const char* name, std::size_t st_size) {
  // One byte more than lstat said: a target that grew since fills it, and is refused.
  std::string target(st_size + 1, '\0');
  const ssize_t n = ::readlinkat(dirfd, name, target.data(), target.size());
  if (n < 0 || static_cast<std::size_t>(n) >= target.size()) return std::nullopt;
  target.resize(static_cast<std::size_t>(n));
  return target;
}

std::expected<DirReader, int> DirReader::adopt(UniqueFd dir) {
  if (!dir) return std::unexpected(EBADF);
  DIR* d = ::fdopendir(dir.get());
  if (!d) return std::unexpected(errno);  // `dir` still owns (and closes) the descriptor
  dir.release();
  return DirReader(d);
}

std::expected<DirReader, int> DirReader::open(int at, const std::string& rel) {
  UniqueFd fd = open_dir_nofollow(at, rel);
  if (!fd) return std::unexpected(errno);
  return adopt(std::move(fd));
}

DirReader::DirReader(DirReader&& o) noexcept : dir_(std::exchange(o.dir_, nullptr)) {}

DirReader& DirReader::operator=(DirReader&& o) noexcept {
  if (this != &o) {
    if (dir_) ::closedir(dir_);
    dir_ = std::exchange(o.dir_, nullptr);
  }
  return *this;
}

DirReader::~DirReader() {
  if (dir_) ::closedir(dir_);
}

int DirReader::fd() const { return dir_ ? ::dirfd(dir_) : -1; }

std::optional<DirEntry> DirReader::next() {
  if (!dir_) return std::nullopt;
  while (dirent* de = ::readdir(dir_)) {
    const std::string_view name = de->d_name;
    if (name == "." || name == "..") continue;
    DirEntry e{de->d_name, {}, 0};
    e.stat_error = stat_nofollow(::dirfd(dir_), de->d_name, e.st);
    return e;
  }
  return std::nullopt;
}

}  // namespace ferry::posix
