// Signature building, parsing and the block-size rule.
#include "protocol/delta/signature.hpp"

#include <algorithm>
#include <cmath>

#include "common/xxhash_inline.hpp"

#include "protocol/delta/rolling_hash.hpp"

namespace ferry::delta {

std::string to_string(DeltaErrc code) {
  switch (code) {
    case DeltaErrc::truncated: return "truncated";
    case DeltaErrc::bad_magic: return "bad magic";
    case DeltaErrc::unsupported_version: return "unsupported version";
    case DeltaErrc::bad_parameters: return "bad parameters";
    case DeltaErrc::bad_op: return "bad op";
    case DeltaErrc::base_mismatch: return "base mismatch";
    case DeltaErrc::out_of_bounds: return "out of bounds";
    case DeltaErrc::size_mismatch: return "size mismatch";
    case DeltaErrc::hash_mismatch: return "hash mismatch";
    case DeltaErrc::sink_failed: return "sink failed";
  }
  return "unknown";
}

Hash128 hash128(Bytes data) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(data.data(), data.size()));
  Hash128 h;
  std::copy(std::begin(c.digest), std::end(c.digest), h.begin());
  return h;
}

struct Hash128Stream::State {
  XXH3_state_t* xxh = XXH3_createState();
  State() { XXH3_128bits_reset(xxh); }
  ~State() { XXH3_freeState(xxh); }
};

Hash128Stream::Hash128Stream() : state_(std::make_unique<State>()) {}
Hash128Stream::~Hash128Stream() = default;
Hash128Stream::Hash128Stream(Hash128Stream&&) noexcept = default;
Hash128Stream& Hash128Stream::operator=(Hash128Stream&&) noexcept = default;

void Hash128Stream::update(Bytes data) { XXH3_128bits_update(state_->xxh, data.data(), data.size()); }

Hash128 Hash128Stream::digest() const {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits_digest(state_->xxh));
  Hash128 h;
  std::copy(std::begin(c.digest), std::end(c.digest), h.begin());
  return h;
}

std::uint32_t choose_block_size(std::uint64_t file_size) {
  const auto root = static_cast<std::uint64_t>(std::sqrt(static_cast<double>(file_size)));
  std::uint64_t b = (root + 63) / 64 * 64;
  b = std::clamp<std::uint64_t>(b, kSmallestChosenBlock, kLargestChosenBlock);
  return static_cast<std::uint32_t>(b);
}

SignatureParams default_params(std::uint64_t file_size) {
  return SignatureParams{.block_size = choose_block_size(file_size), .strong_len = 8};
}

std::expected<void, DeltaError> validate_params(const SignatureParams& p) {
  if (p.block_size < kMinBlockSize || p.block_size > kMaxBlockSize) {
    return std::unexpected(DeltaError{DeltaErrc::bad_parameters,
                                      "block size " + std::to_string(p.block_size) + " outside [" +
                                          std::to_string(kMinBlockSize) + ", " +
                                          std::to_string(kMaxBlockSize) + "]"});
  }
  if (p.strong_len < kMinStrongLen || p.strong_len > kMaxStrongLen) {
    return std::unexpected(DeltaError{DeltaErrc::bad_parameters,
                                      "strong hash length " + std::to_string(p.strong_len) +
                                          " outside [4, 16]"});
  }
  return {};
}

std::uint64_t signature_wire_size(std::uint64_t range_length, const SignatureParams& p) {
  const std::uint64_t blocks = (range_length + p.block_size - 1) / p.block_size;
  return kSignatureHeaderSize + blocks * (4u + p.strong_len);
}

std::uint32_t block_weak(Bytes block) {
  return RollingHash::fold(RollingHash::compute(block.data(), block.size()));
}

void block_strong(Bytes block, std::uint8_t strong_len, std::uint8_t* out) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits(block.data(), block.size()));
  std::copy_n(c.digest, strong_len, out);
}

std::expected<SignatureBuilder, DeltaError> SignatureBuilder::create(
    SignatureParams params, std::uint64_t base_offset, std::uint64_t range_length,
    std::uint64_t file_size, std::vector<std::uint8_t>& out) {
  if (auto ok = validate_params(params); !ok) return std::unexpected(ok.error());
  if (base_offset > file_size || range_length > file_size - base_offset) {
    return std::unexpected(
        DeltaError{DeltaErrc::bad_parameters, "signed range lies outside the base file"});
  }
  out.insert(out.end(), kSignatureMagic.begin(), kSignatureMagic.end());
  wire::put_u16(out, kFormatVersion);
  out.push_back(params.strong_len);
  out.push_back(0);
  wire::put_u32(out, params.block_size);
  wire::put_u64(out, base_offset);
  wire::put_u64(out, range_length);
  wire::put_u64(out, file_size);
  out.reserve(out.size() + signature_wire_size(range_length, params) - kSignatureHeaderSize);
  return SignatureBuilder(params, range_length, out);
}

void SignatureBuilder::emit_block(const std::uint8_t* data, std::size_t len) {
  wire::put_u32(*out_, block_weak(Bytes(data, len)));
  const std::size_t at = out_->size();
  out_->resize(at + params_.strong_len);
  block_strong(Bytes(data, len), params_.strong_len, out_->data() + at);
}

std::expected<void, DeltaError> SignatureBuilder::update(Bytes chunk) {
  if (chunk.size() > range_length_ - consumed_) {
    return std::unexpected(DeltaError{DeltaErrc::bad_parameters, "more bytes than the signed range"});
  }
  consumed_ += chunk.size();
  const std::size_t b = params_.block_size;
  if (!pending_.empty()) {
    const std::size_t take = std::min(b - pending_.size(), chunk.size());
    pending_.insert(pending_.end(), chunk.begin(), chunk.begin() + take);
    chunk = chunk.subspan(take);
    if (pending_.size() < b) return {};
    emit_block(pending_.data(), b);
    pending_.clear();
  }
  while (chunk.size() >= b) {
    emit_block(chunk.data(), b);
    chunk = chunk.subspan(b);
  }
  pending_.assign(chunk.begin(), chunk.end());
  return {};
}

std::expected<void, DeltaError> SignatureBuilder::finish() {
  if (consumed_ != range_length_) {
    return std::unexpected(DeltaError{DeltaErrc::size_mismatch,
                                      "signed " + std::to_string(consumed_) + " of " +
                                          std::to_string(range_length_) + " bytes"});
  }
  if (!pending_.empty()) emit_block(pending_.data(), pending_.size());
  pending_.clear();
  return {};
}

std::expected<void, DeltaError> write_signature(Bytes range, std::uint64_t base_offset,
                                                std::uint64_t file_size, SignatureParams params,
                                                std::vector<std::uint8_t>& out) {
  auto builder = SignatureBuilder::create(params, base_offset, range.size(), file_size, out);
  if (!builder) return std::unexpected(builder.error());
  if (auto ok = builder->update(range); !ok) return ok;
  return builder->finish();
}

std::expected<SignatureView, DeltaError> SignatureView::parse(Bytes w) {
  if (w.size() < kSignatureHeaderSize) {
    return std::unexpected(DeltaError{DeltaErrc::truncated, "signature shorter than its header"});
  }
  if (!std::equal(kSignatureMagic.begin(), kSignatureMagic.end(), w.begin())) {
    return std::unexpected(DeltaError{DeltaErrc::bad_magic, "not a ferry signature"});
  }
  const std::uint16_t version = wire::get_u16(w.data() + 4);
  if (version != kFormatVersion) {
    return std::unexpected(DeltaError{DeltaErrc::unsupported_version,
                                      "signature version " + std::to_string(version)});
  }
  SignatureView v;
  v.params_.strong_len = w[6];
  if (w[7] != 0) return std::unexpected(DeltaError{DeltaErrc::bad_parameters, "reserved byte set"});
  v.params_.block_size = wire::get_u32(w.data() + 8);
  if (auto ok = validate_params(v.params_); !ok) return std::unexpected(ok.error());
  v.base_offset_ = wire::get_u64(w.data() + 12);
  v.range_length_ = wire::get_u64(w.data() + 20);
  v.file_size_ = wire::get_u64(w.data() + 28);
  if (v.base_offset_ > v.file_size_ || v.range_length_ > v.file_size_ - v.base_offset_) {
    return std::unexpected(DeltaError{DeltaErrc::bad_parameters, "signed range outside the file"});
  }
  const std::uint64_t blocks = (v.range_length_ + v.params_.block_size - 1) / v.params_.block_size;
  const std::uint64_t entry = 4u + v.params_.strong_len;
  const std::uint64_t body = w.size() - kSignatureHeaderSize;
  if (body / entry < blocks || (body - blocks * entry) != 0) {
    return std::unexpected(DeltaError{body < blocks * entry ? DeltaErrc::truncated : DeltaErrc::bad_op,
                                      "signature body is " + std::to_string(body) + " bytes, " +
                                          std::to_string(blocks) + " blocks declared"});
  }
  v.block_count_ = static_cast<std::size_t>(blocks);
  v.blocks_ = w.data() + kSignatureHeaderSize;
  return v;
}

std::uint32_t SignatureView::block_length(std::size_t i) const {
  const std::uint64_t start = i * static_cast<std::uint64_t>(params_.block_size);
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(params_.block_size, range_length_ - start));
}

}  // namespace ferry::delta
