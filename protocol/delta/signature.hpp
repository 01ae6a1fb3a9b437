// Block signatures of a base file (or of one byte range of it): per block a 32-bit rolling
// weak checksum and a truncated xxh3-128. Built incrementally from chunks so the agent can sign
// a file it reads piece by piece; parsed zero-copy from the wire (FORMAT.md, "Signature").
#pragma once

#include <cstdint>
#include <expected>
#include <vector>

#include "protocol/delta/delta_types.hpp"

namespace ferry::delta {

inline constexpr std::uint32_t kMinBlockSize = 16;        // accepted on the wire
inline constexpr std::uint32_t kMaxBlockSize = 1u << 20;  // accepted on the wire
inline constexpr std::uint32_t kSmallestChosenBlock = 512;
inline constexpr std::uint32_t kLargestChosenBlock = 128u << 10;
inline constexpr std::uint8_t kMinStrongLen = 4;
inline constexpr std::uint8_t kMaxStrongLen = 16;
inline constexpr std::size_t kSignatureHeaderSize = 36;

struct SignatureParams {
  std::uint32_t block_size = 2048;
  std::uint8_t strong_len = 8;
};

// ~sqrt(size) rounded up to a multiple of 64, within [kSmallestChosenBlock, kLargestChosenBlock]: the block size
// that balances signature size against the literal a small edit costs (as rsync does).
std::uint32_t choose_block_size(std::uint64_t file_size);
SignatureParams default_params(std::uint64_t file_size);
std::expected<void, DeltaError> validate_params(const SignatureParams& params);

// Bytes a signature of `range_length` bytes takes on the wire.
std::uint64_t signature_wire_size(std::uint64_t range_length, const SignatureParams& params);

// Appends a signature to `out` as the covered range arrives in chunks of any size.
class SignatureBuilder {
 public:
  // Signs base[base_offset, base_offset + range_length) of a base of `file_size` bytes.
  static std::expected<SignatureBuilder, DeltaError> create(SignatureParams params,
                                                            std::uint64_t base_offset,
                                                            std::uint64_t range_length,
                                                            std::uint64_t file_size,
                                                            std::vector<std::uint8_t>& out);
  std::expected<void, DeltaError> update(Bytes chunk);
  // Fails when the chunks did not add up to range_length.
  std::expected<void, DeltaError> finish();

 private:
  SignatureBuilder(SignatureParams params, std::uint64_t range_length, std::vector<std::uint8_t>& out)
      : params_(params), range_length_(range_length), out_(&out) {}
  void emit_block(const std::uint8_t* data, std::size_t len);

  SignatureParams params_;
  std::uint64_t range_length_ = 0;
  std::uint64_t consumed_ = 0;
  std::vector<std::uint8_t> pending_;
  std::vector<std::uint8_t>* out_;
};

// One-shot: signs a whole in-memory range.
std::expected<void, DeltaError> write_signature(Bytes range, std::uint64_t base_offset,
                                                std::uint64_t file_size, SignatureParams params,
                                                std::vector<std::uint8_t>& out);

// A validated view of signature bytes; the bytes must outlive the view.
class SignatureView {
 public:
  static std::expected<SignatureView, DeltaError> parse(Bytes wire);

  const SignatureParams& params() const { return params_; }
  std::uint64_t base_offset() const { return base_offset_; }
  std::uint64_t range_length() const { return range_length_; }
  std::uint64_t file_size() const { return file_size_; }
  std::size_t block_count() const { return block_count_; }
  std::uint32_t weak(std::size_t i) const { return wire::get_u32(entry(i)); }
  Bytes strong(std::size_t i) const { return Bytes(entry(i) + 4, params_.strong_len); }
  std::uint64_t block_offset(std::size_t i) const { return base_offset_ + i * params_.block_size; }
  std::uint32_t block_length(std::size_t i) const;

 private:
  const std::uint8_t* entry(std::size_t i) const {
    return blocks_ + i * (4u + params_.strong_len);
  }
  SignatureParams params_;
  std::uint64_t base_offset_ = 0, range_length_ = 0, file_size_ = 0;
  std::size_t block_count_ = 0;
  const std::uint8_t* blocks_ = nullptr;
};

// The weak and strong values exactly as a signature stores them, for one block of data.
std::uint32_t block_weak(Bytes block);
void block_strong(Bytes block, std::uint8_t strong_len, std::uint8_t* out);

}  // namespace ferry::delta
