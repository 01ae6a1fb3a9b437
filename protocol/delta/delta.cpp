// Greedy rolling-checksum matching and the delta encoder.
#include "protocol/delta/delta.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <optional>

#include "protocol/delta/patch.hpp"
#include "protocol/delta/rolling_hash.hpp"

namespace ferry::delta {
namespace {

// Bounds the work per position on pathological bases (e.g. all blocks identical).
constexpr std::size_t kMaxChainProbes = 64;

struct BlockRef {
  std::uint32_t weak;
  std::uint32_t length;
  std::uint64_t offset;          // absolute in the base
  const std::uint8_t* strong;    // nullptr when matches are checked against base bytes
};

// The blocks of one or more signatures (or of a local base), looked up by weak checksum.
class BlockIndex {
 public:
  BlockIndex(std::uint32_t block_size, std::uint8_t strong_len, Bytes base)
      : block_size_(block_size), strong_len_(strong_len), base_(base) {}

  void add(const BlockRef& b) {
    (b.length == block_size_ ? full_ : tails_).push_back(b);
  }

  void build() {
    std::sort(full_.begin(), full_.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
    std::size_t buckets = 16;
    while (buckets < full_.size() * 2) buckets <<= 1;
    mask_ = buckets - 1;
    heads_.assign(buckets, kNone);
    next_.assign(full_.size(), kNone);
    // A bit per weak value (about 16 bits per block, so it stays in L1 for typical files)
    // turns most non-matching positions away before they touch the bucket table.
    filter_shift_ = 32;
    std::size_t bits = 1024;
    while (bits < full_.size() * 16 && bits < (1u << 26)) bits <<= 1;
    for (std::size_t b = bits; b > 1; b >>= 1) --filter_shift_;
    filter_.assign(bits / 64, 0);
    for (const BlockRef& b : full_) {
      const std::uint32_t bit = filter_bit(b.weak);
      filter_[bit / 64] |= 1ull << (bit % 64);
    }
    for (std::size_t i = full_.size(); i-- > 0;) {
      const std::size_t slot = bucket(full_[i].weak);
      next_[i] = heads_[slot];
      heads_[slot] = static_cast<std::uint32_t>(i);
    }
  }

  std::uint32_t block_size() const { return block_size_; }
  bool may_contain(std::uint32_t weak) const {
    const std::uint32_t bit = filter_bit(weak);
    return (filter_[bit / 64] >> (bit % 64)) & 1u;
  }
  bool empty() const { return full_.empty() && tails_.empty(); }
  const std::vector<BlockRef>& tails() const { return tails_; }

  // A full block equal to `window` (weak already computed), preferring the one at `preferred`
  // so consecutive matches merge into one COPY.
  const BlockRef* find(std::uint32_t weak, const std::uint8_t* window,
                       std::optional<std::uint64_t> preferred) const {
    std::optional<std::array<std::uint8_t, 16>> strong;
    if (preferred) {
      auto it = std::lower_bound(full_.begin(), full_.end(), *preferred,
                                 [](const BlockRef& b, std::uint64_t off) { return b.offset < off; });
      if (it != full_.end() && it->offset == *preferred && it->weak == weak &&
          confirm(*it, window, block_size_, strong)) {
        return &*it;
      }
    }
    std::size_t probes = 0;
    for (std::uint32_t i = heads_.empty() ? kNone : heads_[bucket(weak)]; i != kNone; i = next_[i]) {
      const BlockRef& b = full_[i];
      if (b.weak != weak) continue;
      if (confirm(b, window, block_size_, strong)) return &b;
      if (++probes == kMaxChainProbes) break;
    }
    return nullptr;
  }

  // The full block at exactly `offset` when it equals `window`, checked by its strong hash (or the
  // base bytes) alone: the guess that the data simply continues where the last copy ended.
  const BlockRef* at_offset(std::uint64_t offset, const std::uint8_t* window) const {
    auto it = std::lower_bound(full_.begin(), full_.end(), offset,
                               [](const BlockRef& b, std::uint64_t off) { return b.offset < off; });
    std::optional<std::array<std::uint8_t, 16>> strong;
    if (it != full_.end() && it->offset == offset && confirm(*it, window, block_size_, strong)) return &*it;
    return nullptr;
  }

  bool confirm(const BlockRef& b, const std::uint8_t* data, std::size_t len,
               std::optional<std::array<std::uint8_t, 16>>& strong) const {
    if (!b.strong) return std::memcmp(base_.data() + b.offset, data, len) == 0;
    if (!strong) {
      strong.emplace();
      block_strong(Bytes(data, len), strong_len_, strong->data());
    }
    return std::memcmp(strong->data(), b.strong, strong_len_) == 0;
  }

 private:
  static constexpr std::uint32_t kNone = 0xffffffffu;
  std::size_t bucket(std::uint32_t weak) const { return (weak * 0x9E3779B1u) & mask_; }
  std::uint32_t filter_bit(std::uint32_t weak) const {
    return static_cast<std::uint32_t>((weak * 0x85EBCA6Bu) >> filter_shift_);
  }

  std::uint32_t block_size_;
  std::uint8_t strong_len_;
  Bytes base_;
  std::vector<BlockRef> full_, tails_;
  std::vector<std::uint32_t> heads_, next_;
  std::size_t mask_ = 0;
  std::vector<std::uint64_t> filter_;
  unsigned filter_shift_ = 32;
};

// Writes ops, merging adjacent copies and splitting long literals.
class OpWriter {
 public:
  explicit OpWriter(std::vector<std::uint8_t>& out) : out_(out) {}

  void copy(std::uint64_t offset, std::uint64_t length) {
    if (pending_len_ > 0 && pending_off_ + pending_len_ == offset) {
      pending_len_ += length;
      return;
    }
    flush_copy();
    pending_off_ = offset;
    pending_len_ = length;
  }

  void literal(Bytes data) {
    if (data.empty()) return;
    flush_copy();
    stats_.literal_bytes += data.size();
    while (!data.empty()) {
      const std::size_t n = std::min(data.size(), kMaxLiteralOp);
      out_.push_back(kOpLiteral);
      wire::put_varint(out_, n);
      out_.insert(out_.end(), data.begin(), data.begin() + n);
      data = data.subspan(n);
      ++stats_.literal_ops;
    }
  }

  // Where a copy continuing the last one would start.
  std::optional<std::uint64_t> copy_end() const {
    if (pending_len_ == 0) return std::nullopt;
    return pending_off_ + pending_len_;
  }

  DeltaStats finish() {
    flush_copy();
    out_.push_back(kOpEnd);
    return stats_;
  }

 private:
  void flush_copy() {
    if (pending_len_ == 0) return;
    out_.push_back(kOpCopy);
    wire::put_varint(out_, pending_off_);
    wire::put_varint(out_, pending_len_);
    ++stats_.copy_ops;
    stats_.copied_bytes += pending_len_;
    pending_len_ = 0;
  }

  std::vector<std::uint8_t>& out_;
  std::uint64_t pending_off_ = 0, pending_len_ = 0;
  DeltaStats stats_;
};

void write_header(std::vector<std::uint8_t>& out, std::uint64_t base_size, std::uint64_t new_size, const Hash128& h) {
  out.insert(out.end(), kDeltaMagic.begin(), kDeltaMagic.end());
  wire::put_u16(out, kFormatVersion);
  wire::put_u16(out, 0);
  wire::put_u64(out, base_size);
  wire::put_u64(out, new_size);
  out.insert(out.end(), h.begin(), h.end());
}

void write_header(std::vector<std::uint8_t>& out, std::uint64_t base_size, Bytes new_data, const std::optional<Hash128>& known) {
  write_header(out, base_size, new_data.size(), known ? *known : hash128(new_data));
}

// The new file read forward through a buffer of a few blocks, for a matcher that never looks
// behind the literal it has not written out yet: a 1 GiB file costs a few MiB of memory and one
// sequential read (hashed on the way), never a mapping (whose page tables cost more than the
// read itself on some VMs: ~0.4 s per GiB first touched through a fresh mapping, measured).
class StreamWindow {
 public:
  StreamWindow(const ReadAt& read_at, std::uint64_t size, std::size_t capacity, bool hashing)
      : read_at_(read_at), size_(size), buf_(capacity), hashing_(hashing) {}

  std::size_t capacity() const { return buf_.size(); }
  const std::uint8_t* at(std::uint64_t pos) const { return buf_.data() + (pos - start_); }
  bool covers(std::uint64_t upto) const { return upto <= start_ + len_; }
  Hash128 digest() const { return hash_.digest(); }

  // Reads on until [keep_from, upto) is in the buffer, dropping what lies before keep_from
  // (upto - keep_from must fit).
  std::expected<void, DeltaError> advance(std::uint64_t upto, std::uint64_t keep_from) {
    if (upto - keep_from > buf_.size()) return std::unexpected(DeltaError{DeltaErrc::bad_parameters, "stream window too small"});
    if (keep_from > start_) {
      const auto drop = static_cast<std::size_t>(keep_from - start_);
      std::memmove(buf_.data(), buf_.data() + drop, len_ - drop);
      len_ -= drop;
      start_ = keep_from;
    }
    while (start_ + len_ < upto) {
      const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buf_.size() - len_, size_ - (start_ + len_)));
      const ssize_t got = read_at_(start_ + len_, buf_.data() + len_, want);
      if (got < 0) return std::unexpected(DeltaError{DeltaErrc::sink_failed, std::string("read: ") + std::strerror(errno)});
      if (got == 0) return std::unexpected(DeltaError{DeltaErrc::truncated, "the file ended early"});
      if (hashing_) hash_.update(Bytes(buf_.data() + len_, static_cast<std::size_t>(got)));
      len_ += static_cast<std::size_t>(got);
    }
    return {};
  }

 private:
  const ReadAt& read_at_;
  std::uint64_t size_;
  std::vector<std::uint8_t> buf_;
  bool hashing_;
  Hash128Stream hash_;
  std::uint64_t start_ = 0;  // file offset of buf_[0]
  std::size_t len_ = 0;
};

// Where the matcher reads the new file. Bytes in memory are all there: nothing to wait for.
struct InMemory {
  const std::uint8_t* d;
  const std::uint8_t* at(std::uint64_t pos) const { return d + pos; }
  std::expected<void, DeltaError> need(std::uint64_t, std::uint64_t, std::uint64_t&, OpWriter&) { return {}; }
  std::expected<void, DeltaError> need_rest(std::uint64_t, std::uint64_t&, OpWriter&) { return {}; }
};

// A StreamWindow: bytes up to `upto` are read in; the literal so far is written out first when
// the window cannot hold it from its start.
struct Streamed {
  StreamWindow& win;
  std::size_t block;
  const std::uint8_t* at(std::uint64_t pos) const { return win.at(pos); }
  std::expected<void, DeltaError> need(std::uint64_t upto, std::uint64_t p, std::uint64_t& literal_start, OpWriter& ops) {
    if (win.covers(upto)) return {};
    if (upto - literal_start > win.capacity()) {
      ops.literal(Bytes(win.at(literal_start), static_cast<std::size_t>(p - literal_start)));
      literal_start = p;
    }
    return win.advance(upto, literal_start);
  }
  // The rest of the file (the tails and the last literal; the hash needs every byte): a literal
  // longer than the window goes out a window at a time, keeping the end for the tails.
  std::expected<void, DeltaError> need_rest(std::uint64_t n, std::uint64_t& literal_start, OpWriter& ops) {
    while (n - literal_start > win.capacity()) {
      const std::uint64_t upto = literal_start + win.capacity();
      if (auto ok = win.advance(upto, literal_start); !ok) return ok;
      const std::uint64_t emit_to = upto - std::min<std::uint64_t>(block, win.capacity() / 2);
      ops.literal(Bytes(win.at(literal_start), static_cast<std::size_t>(emit_to - literal_start)));
      literal_start = emit_to;
    }
    return need(n, literal_start, literal_start, ops);
  }
};

// Greedy match of one segment of the new file (n bytes from `src`): at each position take the
// first block whose weak and strong checksums agree, else slide one byte. Where the last copy
// ended (or, at the segment's start, at the same offset in the base: `seg_offset` is where the
// segment sits in the new file) the next block is first tried by its strong hash alone, without
// the weak one: an unchanged big file costs one strong hash per block instead of a weak and a
// strong.
template <class Source>
std::expected<void, DeltaError> match_greedy(const BlockIndex& index, Source& src, std::uint64_t n, OpWriter& ops,
                                             std::uint64_t seg_offset = 0) {
  const std::size_t b = index.block_size();
  std::uint64_t p = 0, literal_start = 0;
  const auto literal_upto = [&](std::uint64_t end) {
    ops.literal(Bytes(src.at(literal_start), static_cast<std::size_t>(end - literal_start)));
  };
  if (!index.empty() && n >= b) {
    const RollingHash roller(b);
    std::uint64_t h = 0;
    bool have_h = false;
    for (;;) {
      if (p == literal_start && !have_h) {
        if (auto ok = src.need(p + b, p, literal_start, ops); !ok) return ok;
        if (const BlockRef* hit = index.at_offset(ops.copy_end().value_or(seg_offset + p), src.at(p))) {
          ops.copy(hit->offset, b);
          p += b;
          literal_start = p;
          if (p + b > n) break;
          continue;
        }
      }
      if (!have_h) {
        if (auto ok = src.need(p + b, p, literal_start, ops); !ok) return ok;
        h = RollingHash::compute(src.at(p), b);
        have_h = true;
      }
      const std::uint32_t weak = RollingHash::fold(h);
      const BlockRef* hit = index.may_contain(weak) ? index.find(weak, src.at(p), ops.copy_end()) : nullptr;
      if (hit) {
        literal_upto(p);
        ops.copy(hit->offset, b);
        p += b;
        literal_start = p;
        if (p + b > n) break;
        have_h = false;
        continue;
      }
      if (p + b >= n) break;
      if (auto ok = src.need(p + b + 1, p, literal_start, ops); !ok) return ok;
      h = roller.roll(h, src.at(p)[0], src.at(p)[b]);
      ++p;
    }
  }
  if (auto ok = src.need_rest(n, literal_start, ops); !ok) return ok;
  // A short final block of the base can only match the very end of the segment.
  for (const BlockRef& t : index.tails()) {
    if (t.length > n - literal_start) continue;
    const std::uint8_t* at = src.at(n - t.length);
    std::optional<std::array<std::uint8_t, 16>> strong;
    if (block_weak(Bytes(at, t.length)) == t.weak && index.confirm(t, at, t.length, strong)) {
      literal_upto(n - t.length);
      ops.copy(t.offset, t.length);
      return {};
    }
  }
  literal_upto(n);
  return {};
}

void match_segment(const BlockIndex& index, Bytes seg, OpWriter& ops, std::uint64_t seg_offset = 0) {
  InMemory src{seg.data()};
  (void)match_greedy(index, src, seg.size(), ops, seg_offset);  // bytes in memory: nothing fails
}

void add_signature(BlockIndex& index, const SignatureView& sig) {
  for (std::size_t i = 0; i < sig.block_count(); ++i) {
    index.add(BlockRef{sig.weak(i), sig.block_length(i), sig.block_offset(i), sig.strong(i).data()});
  }
}

}  // namespace

std::expected<DeltaStats, DeltaError> generate_delta(const SignatureView& signature, Bytes new_data,
                                                     std::vector<std::uint8_t>& out, std::optional<Hash128> new_hash) {
  BlockIndex index(signature.params().block_size, signature.params().strong_len, {});
  add_signature(index, signature);
  index.build();
  write_header(out, signature.file_size(), new_data, new_hash);
  OpWriter ops(out);
  match_segment(index, new_data, ops);
  return ops.finish();
}

std::expected<StreamedDelta, DeltaError> generate_delta_streamed(const SignatureView& signature, const ReadAt& read_at,
                                                                std::uint64_t new_size, std::vector<std::uint8_t>& out,
                                                                std::optional<Hash128> new_hash, std::size_t window) {
  BlockIndex index(signature.params().block_size, signature.params().strong_len, {});
  add_signature(index, signature);
  index.build();
  const std::size_t header_at = out.size();
  write_header(out, signature.file_size(), new_size, new_hash.value_or(Hash128{}));
  const std::size_t block = signature.params().block_size;
  if (window == 0) window = std::max<std::size_t>(4u << 20, 4 * block);
  window = static_cast<std::size_t>(std::min<std::uint64_t>(window, std::max<std::uint64_t>(new_size, 1)));
  if (new_size >= block) window = std::max(window, std::min<std::size_t>(2 * block + 1, static_cast<std::size_t>(new_size)));
  StreamWindow win(read_at, new_size, window, !new_hash);
  OpWriter ops(out);
  Streamed src{win, block};
  if (auto ok = match_greedy(index, src, new_size, ops); !ok) {
    out.resize(header_at);
    return std::unexpected(ok.error());
  }
  StreamedDelta done{ops.finish(), new_hash ? *new_hash : win.digest()};
  if (!new_hash) std::copy(done.hash.begin(), done.hash.end(), out.begin() + static_cast<std::ptrdiff_t>(header_at + kDeltaHeaderSize - 16));
  return done;
}

std::expected<DeltaStats, DeltaError> generate_delta_from_base(Bytes base, Bytes new_data,
                                                               std::uint32_t block_size,
                                                               std::vector<std::uint8_t>& out, std::optional<Hash128> new_hash) {
  if (block_size == 0) block_size = choose_block_size(base.size());
  if (auto ok = validate_params(SignatureParams{block_size, 8}); !ok) return std::unexpected(ok.error());
  BlockIndex index(block_size, 8, base);
  for (std::uint64_t off = 0; off < base.size(); off += block_size) {
    const auto len = static_cast<std::uint32_t>(std::min<std::uint64_t>(block_size, base.size() - off));
    index.add(BlockRef{block_weak(base.subspan(off, len)), len, off, nullptr});
  }
  index.build();
  write_header(out, base.size(), new_data, new_hash);
  OpWriter ops(out);
  match_segment(index, new_data, ops);
  return ops.finish();
}

std::expected<std::vector<ByteRange>, DeltaError> unreferenced_base_ranges(Bytes delta) {
  auto reader = DeltaReader::open(delta);
  if (!reader) return std::unexpected(reader.error());
  std::vector<ByteRange> used;
  for (;;) {
    auto op = reader->next();
    if (!op) return std::unexpected(op.error());
    if (!*op) break;
    if ((*op)->kind == DeltaOp::Kind::copy) used.push_back({(*op)->offset, (*op)->length});
  }
  std::sort(used.begin(), used.end(), [](auto& a, auto& b) { return a.offset < b.offset; });
  const std::uint64_t size = reader->header().base_size;
  std::vector<ByteRange> gaps;
  std::uint64_t at = 0;
  for (const ByteRange& r : used) {
    if (r.offset > size || r.length > size - r.offset) {
      return std::unexpected(DeltaError{DeltaErrc::out_of_bounds, "copy outside the base"});
    }
    if (r.offset > at) gaps.push_back({at, r.offset - at});
    at = std::max(at, r.offset + r.length);
  }
  if (at < size) gaps.push_back({at, size - at});
  return gaps;
}

std::expected<DeltaStats, DeltaError> refine_delta(Bytes coarse, std::span<const SignatureView> fine,
                                                   Bytes new_data, std::vector<std::uint8_t>& out, std::optional<Hash128> new_hash) {
  auto reader = DeltaReader::open(coarse);
  if (!reader) return std::unexpected(reader.error());
  if (!new_hash) new_hash = hash128(new_data);
  if (reader->header().output_size != new_data.size() || reader->header().output_hash != *new_hash) {
    return std::unexpected(DeltaError{DeltaErrc::base_mismatch, "coarse delta was made for other data"});
  }
  const std::uint64_t base_size = reader->header().base_size;
  std::uint32_t block = fine.empty() ? kMinBlockSize : fine.front().params().block_size;
  std::uint8_t strong = fine.empty() ? 8 : fine.front().params().strong_len;
  BlockIndex index(block, strong, {});
  for (const SignatureView& s : fine) {
    if (s.params().block_size != block || s.params().strong_len != strong || s.file_size() != base_size) {
      return std::unexpected(DeltaError{DeltaErrc::bad_parameters, "fine signatures disagree"});
    }
    add_signature(index, s);
  }
  index.build();
  write_header(out, base_size, new_data, new_hash);
  OpWriter ops(out);
  // Consecutive literals (split at kMaxLiteralOp) are re-matched as one run.
  std::uint64_t at = 0, run_start = 0;
  for (;;) {
    auto op = reader->next();
    if (!op) return std::unexpected(op.error());
    if (!*op || (*op)->kind == DeltaOp::Kind::copy) {
      match_segment(index, new_data.subspan(run_start, at - run_start), ops, run_start);
      if (!*op) break;
    }
    const DeltaOp& o = **op;
    if (o.length > new_data.size() - at) {
      return std::unexpected(DeltaError{DeltaErrc::out_of_bounds, "coarse delta longer than its output"});
    }
    at += o.length;
    if (o.kind == DeltaOp::Kind::copy) {
      ops.copy(o.offset, o.length);
      run_start = at;
    }
  }
  return ops.finish();
}

}  // namespace ferry::delta
