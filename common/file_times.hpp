// What ferry knows of a file on every platform (FileStat: kind, size, times in nanoseconds since
// the Unix epoch, the unit of every manifest and wire field), read from an open descriptor, and the
// mtime set through one; whether two stats show one file unchanged. POSIX fills it from struct stat
// (common/posix/stat_times.hpp), Windows from the handle's file information, whose times have
// 100 ns steps.
#pragma once

#include <cstdint>

namespace ferry::posix {

enum class FileKind : std::uint8_t { regular, directory, symlink, other };

struct FileStat {
  FileKind kind = FileKind::other;  // symlink: also a Windows reparse point that stands for a link
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::int64_t ctime_ns = 0;  // the last change of data or metadata (Windows: ChangeTime)
  // The permission bits (st_mode & 07777). Windows has none to give: 0755 for a directory, 0644
  // for a file, 0444 for a read-only one.
  std::uint32_t mode = 0;
  std::uint64_t dev = 0;  // Windows: the volume's serial number
  std::uint64_t ino = 0;  // Windows: the file id
};

// The same file, unchanged between the two stats: what any write or rename changes (device, inode,
// size, mtime, ctime). Two writes in one clock tick can still leave all five alike.
inline bool same_file_state(const FileStat& a, const FileStat& b) {
  return a.dev == b.dev && a.ino == b.ino && a.size == b.size && a.mtime_ns == b.mtime_ns && a.ctime_ns == b.ctime_ns;
}

// fstat(2) of `fd` into `out`: 0, or the errno.
int stat_fd(int fd, FileStat& out);

// The file's mtime set to `mtime_ns` (its access time left alone): 0, or the errno. Windows keeps
// 100 ns steps: the time is rounded down to one.
int set_mtime_fd(int fd, std::int64_t mtime_ns);

}  // namespace ferry::posix
