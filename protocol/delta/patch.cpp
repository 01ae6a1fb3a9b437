// Delta reading and the streaming patcher.
#include "protocol/delta/patch.hpp"

#include <algorithm>
#include <cstring>


#include "protocol/delta/delta.hpp"

namespace ferry::delta {
namespace {

std::unexpected<DeltaError> error(DeltaErrc code, std::string message) {
  return std::unexpected(DeltaError{code, std::move(message)});
}

std::expected<DeltaHeader, DeltaError> parse_header_bytes(Bytes d) {
  if (d.size() < kDeltaHeaderSize) return error(DeltaErrc::truncated, "delta shorter than its header");
  if (!std::equal(kDeltaMagic.begin(), kDeltaMagic.end(), d.begin())) {
    return error(DeltaErrc::bad_magic, "not a ferry delta");
  }
  const std::uint16_t version = wire::get_u16(d.data() + 4);
  if (version != kFormatVersion) {
    return error(DeltaErrc::unsupported_version, "delta version " + std::to_string(version));
  }
  if (wire::get_u16(d.data() + 6) != 0) return error(DeltaErrc::bad_parameters, "unknown delta flags");
  DeltaHeader h;
  h.base_size = wire::get_u64(d.data() + 8);
  h.output_size = wire::get_u64(d.data() + 16);
  std::copy_n(d.data() + 24, 16, h.output_hash.begin());
  return h;
}

}  // namespace

std::expected<DeltaHeader, DeltaError> read_delta_header(Bytes delta) {
  return parse_header_bytes(delta);
}

std::expected<DeltaReader, DeltaError> DeltaReader::open(Bytes delta) {
  auto h = parse_header_bytes(delta);
  if (!h) return std::unexpected(h.error());
  DeltaReader r;
  r.header_ = *h;
  r.rest_ = delta.subspan(kDeltaHeaderSize);
  return r;
}

std::expected<std::optional<DeltaOp>, DeltaError> DeltaReader::next() {
  if (ended_) return std::optional<DeltaOp>{};
  if (rest_.empty()) return error(DeltaErrc::truncated, "delta ends without END");
  const std::uint8_t code = rest_[0];
  rest_ = rest_.subspan(1);
  auto varint = [&](std::uint64_t& v) -> std::expected<void, DeltaError> {
    std::size_t used = 0;
    switch (wire::get_varint(rest_, v, used)) {
      case wire::VarintStatus::ok: rest_ = rest_.subspan(used); return {};
      case wire::VarintStatus::need_more: return error(DeltaErrc::truncated, "delta ends inside an op");
      case wire::VarintStatus::overlong: return error(DeltaErrc::bad_op, "overlong varint");
    }
    return {};
  };
  if (code == kOpEnd) {
    if (!rest_.empty()) return error(DeltaErrc::bad_op, "bytes after END");
    ended_ = true;
    return std::optional<DeltaOp>{};
  }
  DeltaOp op{};
  if (code == kOpCopy) {
    op.kind = DeltaOp::Kind::copy;
    if (auto ok = varint(op.offset); !ok) return std::unexpected(ok.error());
    if (auto ok = varint(op.length); !ok) return std::unexpected(ok.error());
  } else if (code == kOpLiteral) {
    op.kind = DeltaOp::Kind::literal;
    if (auto ok = varint(op.length); !ok) return std::unexpected(ok.error());
    if (op.length > rest_.size()) return error(DeltaErrc::truncated, "literal runs past the delta");
    op.data = rest_.subspan(0, op.length);
    rest_ = rest_.subspan(op.length);
  } else {
    return error(DeltaErrc::bad_op, "unknown opcode " + std::to_string(code));
  }
  if (op.length == 0) return error(DeltaErrc::bad_op, "zero-length op");
  return std::optional<DeltaOp>{op};
}

Patcher::Patcher(Bytes base, Sink sink)
    : base_(base), sink_(std::move(sink)) {}
Patcher::~Patcher() = default;
Patcher::Patcher(Patcher&&) noexcept = default;
Patcher& Patcher::operator=(Patcher&&) noexcept = default;

std::expected<void, DeltaError> Patcher::fail(DeltaErrc code, std::string message) {
  error_ = DeltaError{code, std::move(message)};
  return std::unexpected(*error_);
}

std::expected<void, DeltaError> Patcher::emit(Bytes bytes) {
  if (bytes.size() > header_->output_size - written_) {
    return fail(DeltaErrc::out_of_bounds, "output exceeds the declared " +
                                              std::to_string(header_->output_size) + " bytes");
  }
  written_ += bytes.size();
  hash_.update(bytes);
  if (!bytes.empty() && !sink_(bytes)) return fail(DeltaErrc::sink_failed, "output sink refused bytes");
  return {};
}

// Parses one header or op head at the front of `data` and applies it (copies are emitted at
// once). Returns the bytes consumed, or 0 when `data` holds only part of it.
std::expected<std::size_t, DeltaError> Patcher::parse_item(Bytes data) {
  if (!header_) {
    if (data.size() < kDeltaHeaderSize) return 0;
    auto h = parse_header_bytes(data);
    if (!h) {
      error_ = h.error();
      return std::unexpected(h.error());
    }
    if (h->base_size != base_.size()) {
      return std::unexpected(fail(DeltaErrc::base_mismatch,
                                  "delta made against a " + std::to_string(h->base_size) +
                                      "-byte base, have " + std::to_string(base_.size()))
                                 .error());
    }
    header_ = *h;
    return kDeltaHeaderSize;
  }
  const std::uint8_t code = data[0];
  Bytes rest = data.subspan(1);
  // 1: got it, 0: need more, error: overlong.
  auto varint = [&](std::uint64_t& v) -> std::expected<bool, DeltaError> {
    std::size_t used = 0;
    switch (wire::get_varint(rest, v, used)) {
      case wire::VarintStatus::ok: rest = rest.subspan(used); return true;
      case wire::VarintStatus::need_more: return false;
      case wire::VarintStatus::overlong: return std::unexpected(fail(DeltaErrc::bad_op, "overlong varint").error());
    }
    return false;
  };
  if (code == kOpEnd) {
    ended_ = true;
    return 1;
  }
  if (code == kOpCopy) {
    std::uint64_t offset = 0, length = 0;
    auto a = varint(offset);
    if (!a) return std::unexpected(a.error());
    if (!*a) return 0;
    auto b = varint(length);
    if (!b) return std::unexpected(b.error());
    if (!*b) return 0;
    if (length == 0) return std::unexpected(fail(DeltaErrc::bad_op, "zero-length copy").error());
    if (offset > base_.size() || length > base_.size() - offset) {
      return std::unexpected(fail(DeltaErrc::out_of_bounds,
                                  "copy of " + std::to_string(length) + " bytes at " +
                                      std::to_string(offset) + " outside the " +
                                      std::to_string(base_.size()) + "-byte base")
                                 .error());
    }
    if (auto ok = emit(base_.subspan(offset, length)); !ok) return std::unexpected(ok.error());
    return data.size() - rest.size();
  }
  if (code == kOpLiteral) {
    std::uint64_t length = 0;
    auto a = varint(length);
    if (!a) return std::unexpected(a.error());
    if (!*a) return 0;
    if (length == 0) return std::unexpected(fail(DeltaErrc::bad_op, "zero-length literal").error());
    if (length > header_->output_size - written_) {
      return std::unexpected(fail(DeltaErrc::out_of_bounds, "literal exceeds the declared output").error());
    }
    literal_left_ = length;
    return data.size() - rest.size();
  }
  return std::unexpected(fail(DeltaErrc::bad_op, "unknown opcode " + std::to_string(code)).error());
}

std::expected<void, DeltaError> Patcher::feed(Bytes chunk) {
  if (error_) return std::unexpected(*error_);
  for (;;) {
    if (literal_left_ > 0) {
      if (chunk.empty()) return {};
      const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(literal_left_, chunk.size()));
      if (auto ok = emit(chunk.subspan(0, take)); !ok) return ok;
      literal_left_ -= take;
      chunk = chunk.subspan(take);
      continue;
    }
    if (ended_) {
      if (!chunk.empty()) return fail(DeltaErrc::bad_op, "bytes after END");
      return {};
    }
    if (chunk.empty()) return {};
    if (head_.empty()) {
      auto used = parse_item(chunk);
      if (!used) return std::unexpected(used.error());
      if (*used == 0) {
        head_.assign(chunk.begin(), chunk.end());  // shorter than one header/op head
        return {};
      }
      chunk = chunk.subspan(*used);
      continue;
    }
    // An item straddles chunks: grow it a byte at a time so it is consumed exactly.
    head_.push_back(chunk[0]);
    chunk = chunk.subspan(1);
    auto used = parse_item(head_);
    if (!used) return std::unexpected(used.error());
    if (*used > 0) head_.clear();
  }
}

std::expected<void, DeltaError> Patcher::finish() {
  if (error_) return std::unexpected(*error_);
  if (!header_) return fail(DeltaErrc::truncated, "delta ends inside its header");
  if (!ended_ || literal_left_ > 0 || !head_.empty()) return fail(DeltaErrc::truncated, "delta ends without END");
  if (written_ != header_->output_size) {
    return fail(DeltaErrc::size_mismatch, "output is " + std::to_string(written_) + " bytes, " +
                                              std::to_string(header_->output_size) + " declared");
  }
  if (hash_.digest() != header_->output_hash) {
    return fail(DeltaErrc::hash_mismatch, "output does not match the delta's xxh3-128");
  }
  return {};
}

std::expected<Hash128, DeltaError> hash_delta_output(Bytes delta, std::uint64_t base_size, const BaseReader& read,
                                                     const std::atomic<bool>& stop, std::size_t piece) {
  auto reader = DeltaReader::open(delta);
  if (!reader) return std::unexpected(reader.error());
  Hash128Stream hash;
  std::vector<std::uint8_t> buf;
  for (std::uint64_t out_at = 0;;) {
    auto op = reader->next();
    if (!op) return std::unexpected(op.error());
    if (!*op) return hash.digest();
    const DeltaOp& o = **op;
    if (o.kind == DeltaOp::Kind::literal) {
      hash.update(o.data);
      out_at += o.length;
      continue;
    }
    if (o.offset > base_size || o.length > base_size - o.offset)
      return std::unexpected(DeltaError{DeltaErrc::out_of_bounds, "a copy outside the base"});
    const bool in_place = o.offset == out_at;
    buf.resize(static_cast<std::size_t>(std::min<std::uint64_t>(o.length, std::max<std::size_t>(piece, 1))));
    for (std::uint64_t done = 0; done < o.length;) {
      if (stop.load(std::memory_order_relaxed)) return std::unexpected(DeltaError{DeltaErrc::sink_failed, "stopped"});
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), o.length - done));
      if (!read(o.offset + done, MutableBytes(buf.data(), n), in_place))
        return std::unexpected(DeltaError{DeltaErrc::sink_failed, "the base could not be read"});
      hash.update(Bytes(buf.data(), n));
      done += n;
    }
    out_at += o.length;
  }
}

std::expected<std::size_t, DeltaError> apply_delta(Bytes base, Bytes delta, MutableBytes output) {
  auto h = read_delta_header(delta);
  if (!h) return std::unexpected(h.error());
  if (h->output_size > output.size()) {
    return error(DeltaErrc::out_of_bounds, "output buffer smaller than the declared size");
  }
  std::size_t at = 0;
  Patcher p(base, [&](Bytes b) {
    std::memcpy(output.data() + at, b.data(), b.size());
    at += b.size();
    return true;
  });
  if (auto ok = p.feed(delta); !ok) return std::unexpected(ok.error());
  if (auto ok = p.finish(); !ok) return std::unexpected(ok.error());
  return at;
}

std::expected<std::vector<std::uint8_t>, DeltaError> apply_delta(Bytes base, Bytes delta,
                                                                std::uint64_t max_output) {
  auto h = read_delta_header(delta);
  if (!h) return std::unexpected(h.error());
  if (h->output_size > max_output) {
    return error(DeltaErrc::out_of_bounds, "declared output over the caller's cap");
  }
  std::vector<std::uint8_t> out(static_cast<std::size_t>(h->output_size));
  auto n = apply_delta(base, delta, out);
  if (!n) return std::unexpected(n.error());
  return out;
}

}  // namespace ferry::delta
