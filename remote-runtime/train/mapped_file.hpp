// A read-only memory map of a whole file (the .ftensor, .npy and IDX readers share it). Not
// common/mapped_file: ferry-train builds on the box from its own sources alone (the trainer pack,
// helper/train/CMakeLists.txt), and it maps only files it owns, so it needs no truncation guard.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "remote-runtime/train/expected.hpp"
#include "remote-runtime/train/span.hpp"

namespace ferry::train {

class MappedFile {
 public:
  static Expected<MappedFile, std::string> open(const std::filesystem::path& file);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  Span<const std::byte> bytes() const { return {data_, size_}; }
  std::uint64_t size() const { return size_; }

 private:
  MappedFile(const std::byte* data, std::size_t size) : data_(data), size_(size) {}
  const std::byte* data_ = nullptr;  // null for an empty file (mmap cannot map 0 bytes)
  std::size_t size_ = 0;
};

}  // namespace ferry::train
