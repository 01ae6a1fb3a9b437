// Signing a range in block-aligned shares on several threads: see parallel_signature.hpp.
#include "protocol/delta/parallel_signature.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

namespace ferry::delta {
namespace {

constexpr std::size_t kReadPiece = 1u << 20;

// One share: its block entries (the header its own builder writes is cut off).
std::expected<std::vector<std::uint8_t>, DeltaError> sign_share(const ReadAt& read_at, SignatureParams params, std::uint64_t offset,
                                                                std::uint64_t length, std::uint64_t file_size) {
  std::vector<std::uint8_t> out;
  auto builder = SignatureBuilder::create(params, offset, length, file_size, out);
  if (!builder) return std::unexpected(builder.error());
  std::vector<std::uint8_t> buf(static_cast<std::size_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(length, 1), kReadPiece)));
  for (std::uint64_t at = 0; at < length;) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), length - at));
    const ssize_t got = read_at(offset + at, buf.data(), want);
    if (got < 0) return std::unexpected(DeltaError{DeltaErrc::sink_failed, std::string("read: ") + std::strerror(errno)});
    if (got == 0) return std::unexpected(DeltaError{DeltaErrc::truncated, "the file ended inside the signed range"});
    if (auto ok = builder->update(Bytes(buf.data(), static_cast<std::size_t>(got))); !ok) return std::unexpected(ok.error());
    at += static_cast<std::uint64_t>(got);
  }
  if (auto ok = builder->finish(); !ok) return std::unexpected(ok.error());
  out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(kSignatureHeaderSize));
  return out;
}

// The shares of the block range signed by `share(offset, length)` on up to `threads` threads,
// appended to `out` after the whole range's header.
template <typename Share>
std::expected<void, DeltaError> sign_shares(SignatureParams params, std::uint64_t base_offset, std::uint64_t range_length,
                                            std::uint64_t file_size, unsigned threads, std::vector<std::uint8_t>& out, Share share) {
  // The header, exactly as one builder over the whole range writes it.
  const std::size_t start = out.size();
  auto header = SignatureBuilder::create(params, base_offset, range_length, file_size, out);
  if (!header) return std::unexpected(header.error());
  const std::uint64_t blocks = (range_length + params.block_size - 1) / params.block_size;
  const auto shares = static_cast<unsigned>(std::clamp<std::uint64_t>(blocks / 16, 1, std::max(threads, 1u)));
  std::vector<std::optional<std::expected<std::vector<std::uint8_t>, DeltaError>>> parts(shares);
  {
    std::vector<std::jthread> pool;
    for (unsigned i = 0; i < shares; ++i) {
      const std::uint64_t first = blocks * i / shares, last = blocks * (i + 1) / shares;
      const std::uint64_t off = first * params.block_size;
      const std::uint64_t len = std::min(range_length, last * params.block_size) - off;
      auto work = [&, i, off, len] { parts[i] = share(base_offset + off, len); };
      if (i + 1 == shares) work();  // the last share on this thread
      else pool.emplace_back(work);
    }
  }
  for (auto& p : parts) {
    if (!*p) {
      out.resize(start);
      return std::unexpected(p->error());
    }
    out.insert(out.end(), (*p)->begin(), (*p)->end());
  }
  return {};
}

}  // namespace

std::expected<void, DeltaError> sign_in_parallel(const ReadAt& read_at, SignatureParams params, std::uint64_t base_offset,
                                                 std::uint64_t range_length, std::uint64_t file_size, unsigned threads,
                                                 std::vector<std::uint8_t>& out) {
  return sign_shares(params, base_offset, range_length, file_size, threads, out, [&](std::uint64_t off, std::uint64_t len) {
    return sign_share(read_at, params, off, len, file_size);
  });
}

std::expected<void, DeltaError> sign_in_parallel(Bytes range, SignatureParams params, std::uint64_t base_offset,
                                                 std::uint64_t file_size, unsigned threads, std::vector<std::uint8_t>& out) {
  return sign_shares(params, base_offset, range.size(), file_size, threads, out,
                     [&](std::uint64_t off, std::uint64_t len) -> std::expected<std::vector<std::uint8_t>, DeltaError> {
                       std::vector<std::uint8_t> part;
                       const Bytes piece = range.subspan(static_cast<std::size_t>(off - base_offset), static_cast<std::size_t>(len));
                       if (auto ok = write_signature(piece, off, file_size, params, part); !ok) return std::unexpected(ok.error());
                       part.erase(part.begin(), part.begin() + static_cast<std::ptrdiff_t>(kSignatureHeaderSize));
                       return part;
                     });
}

}  // namespace ferry::delta
