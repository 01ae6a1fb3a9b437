// A local file mapped read-only, for reading a big file once without copying it into memory (a
// 1 GiB push delta: no 1 GiB buffer to fault in and fill). A mapped file that someone truncates
// meanwhile would kill the process with SIGBUS on the next touch of a vanished page; here a
// handler maps a page of zeros in its place instead and the mapping reports truncated(): the
// caller treats the file as changed while read (the next sync sends it). On Windows a file with a
// mapped view cannot be truncated at all (SetEndOfFile fails), so truncated() stays false there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <span>
#include <string>

namespace ferry::posix {

class MappedFile {
 public:
  static std::expected<MappedFile, std::string> open(const std::filesystem::path& file);
  // A regular file the caller opened (for reading); the descriptor may be closed afterwards.
  static std::expected<MappedFile, std::string> map(int fd);
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::span<const std::uint8_t> bytes() const { return {static_cast<const std::uint8_t*>(data_), size_}; }
  // The size and mtime the file had when mapped.
  std::uint64_t size() const { return size_; }
  std::int64_t mtime_ns() const { return mtime_ns_; }
  // True once a read found part of the file gone (those bytes read as zeros).
  bool truncated() const;

 private:
  MappedFile() = default;
  void release();
  void* data_ = nullptr;
  std::size_t size_ = 0, mapped_ = 0;
  std::int64_t mtime_ns_ = 0;
  int slot_ = -1;  // POSIX: in the SIGBUS handler's table (Windows needs none)
};

}  // namespace ferry::posix
