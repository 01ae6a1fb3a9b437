// zstd payloads of the sync wire: see payload_codec.hpp.
#include "protocol/payload_codec.hpp"

#include <mutex>
#include <vector>

#include <zstd.h>

namespace ferry::protocol {
namespace {

// zstd contexts reused across calls (creating one per call costs its table setup every time; for a
// batch of tiny files that was most of the agent's CPU), from a free list any thread takes from.
// Not thread_local: MinGW runs a thread_local's destructor after its emulated TLS block is freed,
// which crashed ferry.exe as its threads ended. The pool is never destroyed (threads may still
// hold a context while the process exits).
template <class Ctx, Ctx* (*kMake)(), std::size_t (*kFree)(Ctx*)>
class ContextPool {
 public:
  // A context for one call (nullptr when zstd could not make one); back in the pool at scope end.
  class Lease {
   public:
    explicit Lease(ContextPool& pool) : pool_(pool), ctx_(pool.take()) {}
    ~Lease() { pool_.give_back(ctx_); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Ctx* get() const { return ctx_; }

   private:
    ContextPool& pool_;
    Ctx* ctx_;
  };

  static ContextPool& instance() {
    static auto* pool = new ContextPool;
    return *pool;
  }

 private:
  Ctx* take() {
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        Ctx* c = free_.back();
        free_.pop_back();
        return c;
      }
    }
    return kMake();
  }
  void give_back(Ctx* c) {
    if (!c) return;
    std::lock_guard lock(mutex_);
    free_.push_back(c);
  }

  std::mutex mutex_;
  std::vector<Ctx*> free_;
};
using CompressContexts = ContextPool<ZSTD_CCtx, ZSTD_createCCtx, ZSTD_freeCCtx>;
using DecompressContexts = ContextPool<ZSTD_DCtx, ZSTD_createDCtx, ZSTD_freeDCtx>;

// One frame of `size` bytes into `out`, resized to zstd's bound first: its length, or 0 when
// zstd failed.
std::size_t compress_into(std::vector<std::uint8_t>& out, const std::uint8_t* data, std::size_t size, int level) {
  out.resize(ZSTD_compressBound(size));
  const CompressContexts::Lease lease(CompressContexts::instance());
  ZSTD_CCtx* cctx = lease.get();
  const std::size_t n = cctx ? ZSTD_compressCCtx(cctx, out.data(), out.size(), data, size, level)
                             : ZSTD_compress(out.data(), out.size(), data, size, level);
  return ZSTD_isError(n) ? 0 : n;
}

}  // namespace

int payload_level_for(const std::uint8_t* data, std::size_t size, int level) {
  constexpr std::size_t kSample = 64u << 10;
  if (size < 4 * kSample) return level;
  std::vector<std::uint8_t> out;
  const std::size_t n = compress_into(out, data, kSample, 1);
  return n != 0 && n * 100 > kSample * 97 ? kIncompressibleLevel : level;
}

std::vector<std::uint8_t> compress_payload(const std::uint8_t* data, std::size_t size, int level) {
  std::vector<std::uint8_t> out;
  out.resize(compress_into(out, data, size, level));
  return out;
}

std::vector<std::uint8_t> compress_payload(const std::uint8_t* data, std::size_t size, int level,
                                           std::vector<std::uint8_t>& scratch) {
  const std::size_t n = compress_into(scratch, data, size, level);
  return std::vector<std::uint8_t>(scratch.begin(), scratch.begin() + static_cast<std::ptrdiff_t>(n));
}

std::expected<std::vector<std::uint8_t>, std::string> decompress_payload(const std::uint8_t* data, std::size_t size,
                                                                         std::uint64_t expected, std::uint64_t limit) {
  std::vector<std::uint8_t> out;
  if (auto r = decompress_payload_into(data, size, expected, out, limit); !r) return std::unexpected(r.error());
  return out;
}

std::expected<void, std::string> decompress_payload_into(const std::uint8_t* data, std::size_t size, std::uint64_t expected,
                                                         std::vector<std::uint8_t>& out, std::uint64_t limit) {
  if (expected > limit) return std::unexpected("declared size " + std::to_string(expected) + " over the limit");
  unsigned long long claimed = ZSTD_getFrameContentSize(data, size);
  if (claimed == ZSTD_CONTENTSIZE_ERROR) return std::unexpected("not a zstd frame");
  if (claimed != ZSTD_CONTENTSIZE_UNKNOWN && claimed != expected)
    return std::unexpected("zstd frame holds " + std::to_string(claimed) + " bytes, " + std::to_string(expected) + " declared");
  out.resize(expected);
  const DecompressContexts::Lease lease(DecompressContexts::instance());
  ZSTD_DCtx* dctx = lease.get();
  std::size_t n = dctx ? ZSTD_decompressDCtx(dctx, out.data(), out.size(), data, size)
                       : ZSTD_decompress(out.data(), out.size(), data, size);
  if (ZSTD_isError(n)) return std::unexpected(std::string("zstd: ") + ZSTD_getErrorName(n));
  if (n != expected)
    return std::unexpected("zstd frame decompressed to " + std::to_string(n) + " bytes, " + std::to_string(expected) + " declared");
  return {};
}

std::expected<std::span<const std::uint8_t>, std::string> payload_bytes(std::span<const std::uint8_t> data, bool stored,
                                                                       std::uint64_t expected, std::vector<std::uint8_t>& scratch,
                                                                       std::uint64_t limit) {
  if (stored) {
    if (data.size() != expected)
      return std::unexpected(std::to_string(data.size()) + " stored bytes, " + std::to_string(expected) + " declared");
    return data;
  }
  if (auto r = decompress_payload_into(data.data(), data.size(), expected, scratch, limit); !r) return std::unexpected(r.error());
  return std::span<const std::uint8_t>(scratch);
}

}  // namespace ferry::protocol
