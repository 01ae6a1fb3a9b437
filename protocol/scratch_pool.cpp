// ScratchPool: see scratch_pool.hpp.
#include "protocol/scratch_pool.hpp"

namespace ferry::protocol {

ScratchPool::Lease ScratchPool::take() { return Lease(*this, take_buffer()); }

ScratchPool::Buffer ScratchPool::take_buffer() {
  std::lock_guard lock(mu_);
  if (idle_.empty()) return {};
  Buffer b = std::move(idle_.back());
  idle_.pop_back();
  return b;
}

void ScratchPool::put(Buffer buffer) {
  if (buffer.capacity() == 0) return;
  std::lock_guard lock(mu_);
  if (idle_.size() < most_) idle_.push_back(std::move(buffer));
}

void ScratchPool::clear() {
  std::vector<Buffer> dropped;
  {
    std::lock_guard lock(mu_);
    dropped.swap(idle_);
  }
}

std::size_t ScratchPool::idle() const {
  std::lock_guard lock(mu_);
  return idle_.size();
}

ScratchPool& received_chunks() {
  static ScratchPool pool(4);
  return pool;
}

}  // namespace ferry::protocol
