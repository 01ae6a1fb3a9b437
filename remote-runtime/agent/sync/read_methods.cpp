// sync/read, sync/readDelta and sync/signature: what a pull reads (chunks of a file, or a delta
// from the helper's copy to it) and what a push's delta is built against. read and readDelta
// may name a read-only `source` (Python sources only).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/full_io.hpp"
#include "common/posix/stat_times.hpp"
#include "common/unique_fd.hpp"
#include "protocol/payload_codec.hpp"
#include "remote-runtime/agent/sync/read_delta.hpp"
#include "remote-runtime/agent/sync/sync_bindings.hpp"

namespace ferry::agent::sync {
namespace {

using protocol::json;
namespace ec = protocol::error_code;

wire::Bytes compress(const std::vector<std::uint8_t>& bytes) { return protocol::compress_payload(bytes.data(), bytes.size()); }

// Up to `n` bytes at `offset` (fewer at the end of the file).
std::vector<std::uint8_t> read_at(int fd, std::uint64_t offset, std::uint64_t n) {
  std::vector<std::uint8_t> buf(n);
  const ssize_t got = posix::pread_full(fd, buf.data(), buf.size(), offset);
  buf.resize(static_cast<std::size_t>(std::max<ssize_t>(got, 0)));  // a read error: what a short read gives
  return buf;
}

Reply<wire::ReadResult> read(SyncContext& ctx, const wire::ReadParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  const std::uint64_t offset = p.offset.value_or(0);
  const std::uint64_t length = std::min<std::uint64_t>(p.length.value_or(kMaxReadChunk), kMaxReadChunk);
  auto resolved = t->resolver().resolve(t->wire_path(p.path));
  if (!resolved) return std::unexpected(invalid_params(c.method(), resolved.error()));
  if (auto refused = t->source_refuses(p.path, 0)) return std::unexpected(*refused);
  const std::string what = c.method() + " '" + p.path + "'";
  // O_NOFOLLOW: a symlink at the final component is never read through.
  const posix::UniqueFd file(::open(resolved->absolute.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  const int fd = file.get();
  if (!file) {
    int err = errno;
    return std::unexpected(ResponseError{err == ENOENT ? ec::kInvalidParams : ec::kIoError, what + ": " + std::strerror(err),
                                         json{{"code", err == ENOENT ? "not_found" : "io"}}});
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return std::unexpected(invalid_params(what, "not a regular file", json{{"code", "wrong_kind"}}));
  }
  const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
  if (auto refused = t->source_refuses(p.path, size)) return std::unexpected(*refused);
  auto bytes = read_at(fd, offset, offset >= size ? 0 : std::min<std::uint64_t>(length, size - offset));
  wire::ReadResult out;
  out.path = p.path;
  out.offset = offset;
  out.raw_size = bytes.size();
  // A chunk of a checkpoint or an archive does not compress: zstd only burns the box's CPU on
  // it (sampled as a push samples its chunks), and even its fastest level copies every byte
  // once here and once more in the helper. Such a chunk goes as it is.
  const int level = protocol::payload_level_for(bytes.data(), bytes.size(), protocol::kPayloadLevel);
  out.stored = level == protocol::kIncompressibleLevel;
  out.data = out.stored ? std::move(bytes) : protocol::compress_payload(bytes.data(), bytes.size(), level);
  out.size = size;
  out.mtime_ns = posix::mtime_of(st);
  out.mode = static_cast<std::uint32_t>(st.st_mode & 07777);
  out.eof = offset + bytes.size() >= size;
  return out;
}

// Pull with deltas (read_delta.hpp): a delta from the helper's signed copy to this file.
Reply<wire::ReadDeltaResult> read_delta_method(SyncContext& ctx, const wire::ReadDeltaParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  auto resolved = t->resolver().resolve(t->wire_path(p.path));
  if (!resolved) return std::unexpected(invalid_params(c.method(), resolved.error()));
  if (t->source) {
    struct stat st {};
    if (::lstat(resolved->absolute.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      return std::unexpected(invalid_params(c.method() + " '" + p.path + "'", "not a regular file", json{{"code", "not_found"}}));
    if (auto refused = t->source_refuses(p.path, static_cast<std::uint64_t>(st.st_size))) return std::unexpected(*refused);
  }
  ReadDeltaRequest req;
  req.signature = p.signature;
  if (p.fine) {
    if (p.fine->size() > req.max_ranges) return std::unexpected(invalid_params(c.method(), "'fine' holds more than 4096 signatures"));
    for (const auto& f : *p.fine) req.fine.push_back(f);
  }
  req.ranges_only = p.ranges_only;
  if (p.max_delta) req.max_delta = std::min<std::uint64_t>(*p.max_delta, kMaxSyncPayload / 2);
  auto got = read_delta(resolved->absolute, req);
  if (!got) return std::unexpected(t->io_error(p.path, got.error()));
  wire::ReadDeltaResult out;
  out.path = p.path;
  out.size = got->size;
  out.mtime_ns = got->mtime_ns;
  out.mode = got->mode;
  out.hash = got->hash;
  if (got->ranges) {
    out.ranges.emplace();
    for (const auto& rg : *got->ranges) out.ranges->emplace_back(rg.offset, rg.length);
  } else if (got->too_big) {
    out.too_big = true;
  } else {
    out.delta_size = got->delta.size();
    out.delta = compress(got->delta);
    out.literal_bytes = got->stats.literal_bytes;
    out.copied_bytes = got->stats.copied_bytes;
  }
  return out;
}

Reply<wire::SignatureResult> signature(SyncContext& ctx, const wire::SignatureParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  std::optional<ferry::delta::SignatureParams> params;
  if (p.block_size) {
    ferry::delta::SignatureParams sp;
    sp.block_size = *p.block_size;
    if (p.strong_len) sp.strong_len = static_cast<std::uint8_t>(std::min<std::uint32_t>(*p.strong_len, 255));
    if (auto ok = ferry::delta::validate_params(sp); !ok) return std::unexpected(invalid_params(c.method(), ok.error().message));
    params = sp;
  }
  wire::SignatureResult out;
  if (p.ranges) {
    // Second level of a two-level delta: signatures of just these byte ranges.
    out.signatures.emplace();
    for (const auto& rg : *p.ranges) {
      auto sig = t->w().signature(p.path, params, rg);
      if (!sig) return std::unexpected(t->io_error(p.path, sig.error()));
      out.signatures->push_back(std::move(*sig));
    }
    return out;
  }
  auto sig = t->w().signature(p.path, params);
  if (!sig) return std::unexpected(t->io_error(p.path, sig.error()));
  out.signature = std::move(*sig);
  return out;
}

}  // namespace

void bind_read_methods(BindingTable& table, SyncContext& ctx) {
  table.request<wire::ReadParams, wire::ReadResult>(
      wire::method::kRead, [&ctx](const wire::ReadParams& p, CallContext& c) { return read(ctx, p, c); });
  table.request<wire::ReadDeltaParams, wire::ReadDeltaResult>(
      wire::method::kReadDelta, [&ctx](const wire::ReadDeltaParams& p, CallContext& c) { return read_delta_method(ctx, p, c); });
  table.request<wire::SignatureParams, wire::SignatureResult>(
      wire::method::kSignature, [&ctx](const wire::SignatureParams& p, CallContext& c) { return signature(ctx, p, c); });
}

}  // namespace ferry::agent::sync
