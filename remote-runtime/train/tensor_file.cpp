// .ftensor header codec, atomic writer and mmap reader. Header fields are read byte by byte as
// little-endian so the parser never depends on alignment or host byte order.
#include "remote-runtime/train/tensor_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <utility>

#include "remote-runtime/train/std_compat.hpp"

namespace ferry::train {
namespace {

// GCC and Clang predefine these (std::endian is C++20).
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "ferry-train's file formats assume a little-endian host");

constexpr char kMagic[6] = {'F', 'T', 'N', 'S', 'R', '\0'};
constexpr std::size_t kFixedHeader = 24;

std::uint64_t read_le(Span<const std::byte> b, std::size_t at, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i) v |= static_cast<std::uint64_t>(b[at + i]) << (8 * i);
  return v;
}

void put_le(std::vector<std::byte>& out, std::size_t at, std::uint64_t v, std::size_t width) {
  for (std::size_t i = 0; i < width; ++i) out[at + i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i64: return 8;
    case DType::i32: return 4;
    case DType::u8: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i64: return "i64";
    case DType::i32: return "i32";
    case DType::u8: return "u8";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::u8}) {
    if (dtype_name(d) == name) return d;
  }
  return std::nullopt;
}

std::uint64_t TensorHeader::elements() const {
  std::uint64_t n = 1;
  for (auto d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

Expected<TensorHeader, std::string> parse_tensor_header(Span<const std::byte> b, std::uint64_t file_size) {
  if (b.size() > file_size) return Unexpected("header buffer larger than the file");
  if (b.size() < kFixedHeader) return Unexpected("not an .ftensor file: shorter than the 24-byte header");
  if (std::memcmp(b.data(), kMagic, sizeof kMagic) != 0) return Unexpected("not an .ftensor file: bad magic (want \"FTNSR\\0\")");
  const auto version = read_le(b, 6, 2);
  if (version != kTensorVersion) return Unexpected("unsupported .ftensor version " + std::to_string(version) + " (this build reads 1)");
  const auto dtype_code = static_cast<std::uint8_t>(b[8]);
  if (dtype_code < 1 || dtype_code > 6) return Unexpected("bad dtype code " + std::to_string(dtype_code));
  const int rank = static_cast<int>(b[9]);
  if (rank < 1 || rank > kTensorMaxRank) return Unexpected("bad rank " + std::to_string(rank) + " (1..8)");
  if (read_le(b, 10, 2) != 0 || read_le(b, 12, 4) != 0) return Unexpected("reserved header bytes are not zero");
  TensorHeader h;
  h.dtype = static_cast<DType>(dtype_code);
  h.data_offset = read_le(b, 16, 8);
  const std::size_t shape_end = kFixedHeader + 8 * static_cast<std::size_t>(rank);
  if (h.data_offset % kTensorAlignment != 0) return Unexpected("data offset " + std::to_string(h.data_offset) + " is not 64-byte aligned");
  if (h.data_offset < shape_end) return Unexpected("data offset overlaps the header");
  if (h.data_offset > file_size) return Unexpected("data offset beyond the end of the file");
  if (b.size() < shape_end) return Unexpected("truncated header: the shape is cut off");
  // Products are bounded by the file size, so no overflow: each step is checked before it multiplies.
  std::uint64_t elements = 1;
  const std::uint64_t max_elements = (file_size - h.data_offset) / dtype_size(h.dtype);
  bool zero = false;
  for (int i = 0; i < rank; ++i) {
    const std::uint64_t d = read_le(b, kFixedHeader + 8 * static_cast<std::size_t>(i), 8);
    if (d > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return Unexpected("dimension " + std::to_string(i) + " is too large");
    h.shape.push_back(static_cast<std::int64_t>(d));
    if (d == 0) zero = true;
    if (!zero) {
      if (elements > max_elements / d) return Unexpected("the shape needs more data than the file holds");
      elements *= d;
    }
  }
  if (zero) elements = 0;
  h.data_bytes = elements * dtype_size(h.dtype);
  if (h.data_offset + h.data_bytes != file_size) {
    return Unexpected("file size " + std::to_string(file_size) + " does not match the header (" +
                           std::to_string(h.data_offset) + " + " + std::to_string(h.data_bytes) + " data bytes)");
  }
  // The padding must be zero: it keeps files byte-identical for identical content.
  for (std::size_t i = shape_end; i < b.size() && i < h.data_offset; ++i) {
    if (b[i] != std::byte{0}) return Unexpected("header padding is not zero");
  }
  return h;
}

std::vector<std::byte> encode_tensor_header(DType dtype, Span<const std::int64_t> shape) {
  const std::size_t shape_end = kFixedHeader + 8 * shape.size();
  const std::size_t offset = (shape_end + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  std::vector<std::byte> out(offset, std::byte{0});
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put_le(out, 6, kTensorVersion, 2);
  out[8] = static_cast<std::byte>(dtype);
  out[9] = static_cast<std::byte>(shape.size());
  put_le(out, 16, offset, 8);
  for (std::size_t i = 0; i < shape.size(); ++i) put_le(out, kFixedHeader + 8 * i, static_cast<std::uint64_t>(shape[i]), 8);
  return out;
}

Expected<TensorFileWriter, std::string> TensorFileWriter::create(const std::filesystem::path& file, DType dtype,
                                                                      Span<const std::int64_t> shape) {
  if (shape.empty() || shape.size() > static_cast<std::size_t>(kTensorMaxRank)) return Unexpected("rank must be 1..8");
  std::uint64_t elements = 1;
  for (auto d : shape) {
    if (d < 0) return Unexpected("negative dimension");
    if (d != 0 && elements > std::numeric_limits<std::uint64_t>::max() / 16 / static_cast<std::uint64_t>(d)) return Unexpected("shape too large");
    elements *= static_cast<std::uint64_t>(d);
  }
  TensorFileWriter w;
  w.file_ = file;
  w.tmp_ = file;
  w.tmp_ += ".tmp." + std::to_string(::getpid());
  w.expected_ = elements * dtype_size(dtype);
  w.fd_ = ::open(w.tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w.fd_ < 0) return Unexpected(errno_text("cannot create " + w.tmp_.string()));
  const auto header = encode_tensor_header(dtype, shape);
  const auto expected_data = w.expected_;
  w.expected_ = 0;  // header bytes do not count as data
  if (auto r = w.write(header); !r) return Unexpected(r.error());
  w.written_ = 0;
  w.expected_ = expected_data;
  return w;
}

TensorFileWriter::TensorFileWriter(TensorFileWriter&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), file_(std::move(o.file_)), tmp_(std::move(o.tmp_)), expected_(o.expected_), written_(o.written_) {}

TensorFileWriter::~TensorFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
  }
}

Expected<void, std::string> TensorFileWriter::write(Span<const std::byte> data) {
  if (fd_ < 0) return Unexpected("writer is closed");
  const std::byte* p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Unexpected(errno_text("write " + tmp_.string()));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  written_ += data.size();
  return {};
}

Expected<void, std::string> TensorFileWriter::commit() {
  if (fd_ < 0) return Unexpected("writer is closed");
  if (written_ != expected_) {
    return Unexpected("wrote " + std::to_string(written_) + " data bytes, the shape needs " + std::to_string(expected_));
  }
  if (::fsync(fd_) != 0) return Unexpected(errno_text("fsync " + tmp_.string()));
  if (::close(std::exchange(fd_, -1)) != 0) return Unexpected(errno_text("close " + tmp_.string()));
  if (::rename(tmp_.c_str(), file_.c_str()) != 0) {
    const auto err = errno_text("rename to " + file_.string());
    std::error_code ec;
    std::filesystem::remove(tmp_, ec);
    return Unexpected(err);
  }
  return {};
}

Expected<void, std::string> write_tensor_file(const std::filesystem::path& file, DType dtype, Span<const std::int64_t> shape,
                                                   Span<const std::byte> data) {
  auto w = TensorFileWriter::create(file, dtype, shape);
  if (!w) return Unexpected(w.error());
  if (auto r = w->write(data); !r) return r;
  return w->commit();
}

Expected<TensorFile, std::string> TensorFile::open(const std::filesystem::path& file) {
  auto map = MappedFile::open(file);
  if (!map) return Unexpected(map.error());
  auto header = parse_tensor_header(map->bytes(), map->size());
  if (!header) return Unexpected(file.string() + ": " + header.error());
  return TensorFile(std::move(*map), std::move(*header));
}

std::uint64_t TensorFile::row_bytes() const {
  std::uint64_t n = dtype_size(header_.dtype);
  for (std::size_t i = 1; i < header_.shape.size(); ++i) n *= static_cast<std::uint64_t>(header_.shape[i]);
  return n;
}

const std::byte* TensorFile::row(std::int64_t index) const {
  return static_cast<const std::byte*>(data()) + static_cast<std::uint64_t>(index) * row_bytes();
}

std::uint16_t float_to_half(float value) {
  const auto f = bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = (f >> 16) & 0x8000u;
  const std::uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));  // inf / nan
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds past 65504: inf
  if (abs < 0x38800000u) {
    // Subnormal half (or zero): shift the full mantissa down with round to nearest even.
    if (abs < 0x33000000u) return static_cast<std::uint16_t>(sign);
    const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const int shift = 113 - static_cast<int>(abs >> 23) + 13;
    std::uint32_t h = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = ((abs >> 13) - (112u << 10));
  const std::uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<std::uint16_t>(sign | h);
}

float half_to_float(std::uint16_t bits) {
  const std::uint32_t sign = static_cast<std::uint32_t>(bits & 0x8000u) << 16;
  const std::uint32_t exp = (bits >> 10) & 0x1fu;
  std::uint32_t mant = bits & 0x3ffu;
  std::uint32_t f = 0;
  if (exp == 0) {
    if (mant == 0) {
      f = sign;
    } else {
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      f = sign | static_cast<std::uint32_t>(112 - e) << 23 | (mant & 0x3ffu) << 13;
    }
  } else if (exp == 31) {
    f = sign | 0x7f800000u | mant << 13;
  } else {
    f = sign | (exp + 112) << 23 | mant << 13;
  }
  return bit_cast<float>(f);
}

std::uint16_t float_to_bfloat16(float value) {
  const auto f = bit_cast<std::uint32_t>(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((f >> 16) | 0x40u);  // keep nan a nan
  const std::uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
  return static_cast<std::uint16_t>((f + rounding) >> 16);
}

float bfloat16_to_float(std::uint16_t bits) { return bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }

}  // namespace ferry::train
