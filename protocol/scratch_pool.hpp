// Byte buffers for sync payloads, kept between uses: the agent decompresses pushed chunks into
// them, the helper reads and compresses streamed chunks in them. A fresh 8 MiB vector per chunk
// is zeroed and faulted in again each time (each end's share was about a twentieth of an initial
// sync's time at 50 ms on 2 cores, bench/wan). The agent empties its pool when the link is idle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace ferry::protocol {

class ScratchPool {
 public:
  using Buffer = std::vector<std::uint8_t>;

  // One buffer, back in the pool when the lease ends.
  class Lease {
   public:
    Lease(ScratchPool& pool, Buffer buffer) : pool_(&pool), buffer_(std::move(buffer)) {}
    Lease(Lease&& other) noexcept : pool_(std::exchange(other.pool_, nullptr)), buffer_(std::move(other.buffer_)) {}
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
      if (pool_) pool_->put(std::move(buffer_));
    }
    Buffer& get() { return buffer_; }

   private:
    ScratchPool* pool_;
    Buffer buffer_;
  };

  // Keeps at most `most` idle buffers (more than that come and go as plain vectors).
  explicit ScratchPool(std::size_t most = 8) : most_(most) {}

  // The buffer given back last (its pages still warm), or an empty one.
  Lease take();
  // The same without a lease, for a buffer that moves on (into a message) and may come back by
  // put, or not (then it is simply freed).
  Buffer take_buffer();
  void put(Buffer buffer);
  // Frees every idle buffer.
  void clear();
  std::size_t idle() const;

 private:
  const std::size_t most_;
  mutable std::mutex mu_;
  std::vector<Buffer> idle_;
};

// Byte strings the helper's agent links read off the wire into buffers of their own (a pulled
// file's chunks, AgentLink): the pull gives each back once written, so the next chunk lands in
// pages already faulted in, and empties it when done.
ScratchPool& received_chunks();

}  // namespace ferry::protocol
