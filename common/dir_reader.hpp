// The no-follow directory walk both ends share: directories opened with O_NOFOLLOW, entries
// statted with AT_SYMLINK_NOFOLLOW, link targets read with readlinkat, so a symlink is always
// seen as itself and never walked into. What to do with each entry stays with the caller
// (the helper's scanner, the agent's tree listing).
#pragma once

#include <dirent.h>
#include <sys/stat.h>

#include <expected>
#include <optional>
#include <string>
#include <string_view>

#include "common/unique_fd.hpp"

namespace ferry::posix {

// Opens directory `rel` under `at` without following a symlink in its last component (an
// empty `rel` opens `at` itself anew). Invalid with errno set on failure.
UniqueFd open_dir_nofollow(int at, const std::string& rel);

// fstatat(AT_SYMLINK_NOFOLLOW): 0, or the errno.
int stat_nofollow(int dirfd, const char* name, struct stat& st);

// The target of the symlink `name` under `dirfd`, whose lstat said `st_size` bytes; nothing
// if it cannot be read or changed length since (the caller's stat is then stale).
std::optional<std::string> read_link_at(int dirfd, const char* name, std::size_t st_size);

struct DirEntry {
  const char* name;  // valid until the next call to next()
  struct stat st;    // not following a symlink
  int stat_error;    // 0, or the errno of the stat (st is then zero)
};

// One open directory's entries other than "." and "..".
class DirReader {
 public:
  // Takes an open directory descriptor; the errno of fdopendir on failure (the fd is closed).
  static std::expected<DirReader, int> adopt(UniqueFd dir);
  // open_dir_nofollow + adopt: the errno of whichever failed.
  static std::expected<DirReader, int> open(int at, const std::string& rel);

  DirReader(DirReader&& o) noexcept;
  DirReader& operator=(DirReader&& o) noexcept;
  DirReader(const DirReader&) = delete;
  DirReader& operator=(const DirReader&) = delete;
  ~DirReader();

  // The next entry, or nothing at the end (or on a read error).
  std::optional<DirEntry> next();
  int fd() const;

 private:
  explicit DirReader(DIR* dir) : dir_(dir) {}
  DIR* dir_ = nullptr;
};

}  // namespace ferry::posix
