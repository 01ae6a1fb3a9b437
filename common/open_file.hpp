// Opening and closing ferry's own files the same way on every platform: close-on-exec on POSIX;
// binary mode (no CR/LF translation), not inherited, and the UTF-16 form of the path on Windows.
// Callers that open a file by path use open_file instead of open(2), so none of them needs
// O_CLOEXEC (missing on Windows) or O_BINARY (missing on POSIX).
#pragma once

#include <fcntl.h>

#include <filesystem>

namespace ferry::posix {

// open(2) with `flags` made of O_RDONLY/O_WRONLY/O_RDWR, O_CREAT, O_TRUNC, O_EXCL, O_APPEND
// (`mode` for a created file; on Windows only its owner-write bit counts: without it the file is
// read-only). The descriptor, or -1 with errno set.
int open_file(const std::filesystem::path& path, int flags, int mode = 0666);

// open_file that never follows a link in the last component of `path` (ELOOP), for files ferry
// reads or replaces inside a tree the user may have put links in.
int open_file_nofollow(const std::filesystem::path& path, int flags, int mode = 0666);

// close(2) (_close on Windows): 0, or -1 with errno set.
int close_fd(int fd) noexcept;

}  // namespace ferry::posix
