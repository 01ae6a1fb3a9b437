// IDX files (the MNIST distribution format): big-endian magic with the element type and rank,
// big-endian dimensions, then the data. Read through mmap and validated against the file size.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "remote-runtime/train/expected.hpp"
#include "remote-runtime/train/mapped_file.hpp"
#include "remote-runtime/train/span.hpp"

namespace ferry::train {

enum class IdxType : std::uint8_t { u8 = 0x08, i8 = 0x09, i16 = 0x0B, i32 = 0x0C, f32 = 0x0D, f64 = 0x0E };

struct IdxHeader {
  IdxType type = IdxType::u8;
  std::vector<std::int64_t> dims;
  std::uint64_t data_offset = 0;
  std::uint64_t data_bytes = 0;
};

std::size_t idx_type_size(IdxType type);
Expected<IdxHeader, std::string> parse_idx_header(Span<const std::byte> bytes, std::uint64_t file_size);

class IdxFile {
 public:
  static Expected<IdxFile, std::string> open(const std::filesystem::path& file);
  const IdxHeader& header() const { return header_; }
  // Raw big-endian data (for u8/i8 it is simply the values).
  Span<const std::byte> data() const { return map_.bytes().subspan(header_.data_offset, header_.data_bytes); }

 private:
  IdxFile(MappedFile map, IdxHeader header) : map_(std::move(map)), header_(std::move(header)) {}
  MappedFile map_;
  IdxHeader header_;
};

// One MNIST split: images [count, rows, cols] u8 and labels [count] u8 in 0..9.
struct MnistSplit {
  IdxFile images;
  IdxFile labels;
  std::int64_t count = 0;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  const std::uint8_t* image(std::int64_t i) const {
    return reinterpret_cast<const std::uint8_t*>(images.data().data()) + i * rows * cols;
  }
  std::uint8_t label(std::int64_t i) const { return static_cast<std::uint8_t>(labels.data()[static_cast<std::size_t>(i)]); }
};

// Finds train-images-idx3-ubyte / train-labels-idx1-ubyte (or t10k-* for the test split; the
// "train-images.idx3-ubyte" spelling too) in `dir` and checks they belong together.
Expected<MnistSplit, std::string> load_mnist_split(const std::filesystem::path& dir, bool train);

}  // namespace ferry::train
