// The .ftensor format of `tensor` datasets: a small little-endian header, then 64-byte-aligned
// row-major data, read through mmap. Layout (docs/train-config.md has the table):
//   0  magic "FTNSR\0"   6  u16 version (1)   8  u8 dtype   9  u8 rank (1..8)
//   10 u16 + 12 u32 reserved (0)   16 u64 data offset (multiple of 64)   24 u64 shape[rank]
//   zero padding up to the data offset; the data runs to the end of the file, exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "remote-runtime/train/expected.hpp"
#include "remote-runtime/train/mapped_file.hpp"
#include "remote-runtime/train/span.hpp"

namespace ferry::train {

enum class DType : std::uint8_t { f32 = 1, f16 = 2, bf16 = 3, i64 = 4, i32 = 5, u8 = 6 };

std::size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);

inline constexpr std::size_t kTensorAlignment = 64;
inline constexpr int kTensorMaxRank = 8;
inline constexpr std::uint16_t kTensorVersion = 1;

struct TensorHeader {
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
  std::uint64_t data_offset = 0;
  std::uint64_t data_bytes = 0;
  std::uint64_t elements() const;
};

// Validates a header against the whole file's size: a hostile file is rejected, never read past.
// `bytes` may be just the file's first bytes (at least the header) or all of it.
Expected<TensorHeader, std::string> parse_tensor_header(Span<const std::byte> bytes, std::uint64_t file_size);
// The header bytes, padded to the data offset.
std::vector<std::byte> encode_tensor_header(DType dtype, Span<const std::int64_t> shape);

// Writes a .ftensor atomically (temp file in the same directory, fsync, rename), in pieces.
class TensorFileWriter {
 public:
  static Expected<TensorFileWriter, std::string> create(const std::filesystem::path& file, DType dtype,
                                                             Span<const std::int64_t> shape);
  TensorFileWriter(TensorFileWriter&& other) noexcept;
  TensorFileWriter& operator=(TensorFileWriter&&) = delete;
  ~TensorFileWriter();  // an uncommitted writer removes its temp file

  Expected<void, std::string> write(Span<const std::byte> data);
  // Fails unless exactly the header's data size was written.
  Expected<void, std::string> commit();

 private:
  TensorFileWriter() = default;
  int fd_ = -1;
  std::filesystem::path file_, tmp_;
  std::uint64_t expected_ = 0, written_ = 0;
};

Expected<void, std::string> write_tensor_file(const std::filesystem::path& file, DType dtype,
                                                   Span<const std::int64_t> shape, Span<const std::byte> data);

// A memory-mapped .ftensor: rows are the first dimension.
class TensorFile {
 public:
  static Expected<TensorFile, std::string> open(const std::filesystem::path& file);

  DType dtype() const { return header_.dtype; }
  const std::vector<std::int64_t>& shape() const { return header_.shape; }
  const void* data() const { return map_.bytes().data() + header_.data_offset; }
  std::uint64_t data_bytes() const { return header_.data_bytes; }
  std::int64_t rows() const { return header_.shape.front(); }
  std::uint64_t row_bytes() const;
  const std::byte* row(std::int64_t index) const;  // index < rows(), checked by the caller

 private:
  TensorFile(MappedFile map, TensorHeader header) : map_(std::move(map)), header_(std::move(header)) {}
  MappedFile map_;
  TensorHeader header_;
};

// Scalar conversions shared by the converters (round to nearest even).
std::uint16_t float_to_half(float value);
float half_to_float(std::uint16_t bits);
std::uint16_t float_to_bfloat16(float value);
float bfloat16_to_float(std::uint16_t bits);

}  // namespace ferry::train
