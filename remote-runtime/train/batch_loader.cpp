// Batch loader: workers claim batch numbers in order and park results in a map; the consumer takes
// them strictly in order, so the stream is identical for any worker count.
#include "remote-runtime/train/batch_loader.hpp"

#include <chrono>
#include <numeric>
#include <stdexcept>

#include <torch/types.h>

namespace ferry::train {
namespace {

// GCC and Clang's 128-bit integer on 64-bit targets; __extension__ keeps -pedantic quiet about it.
__extension__ using Uint128 = unsigned __int128;

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<std::int64_t> epoch_order(std::int64_t samples, std::uint64_t seed, std::int64_t epoch, bool shuffle) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(samples));
  std::iota(order.begin(), order.end(), 0);
  if (!shuffle) return order;
  std::uint64_t state = seed * 0x100000001B3ULL + static_cast<std::uint64_t>(epoch) + 1;
  for (std::int64_t i = samples - 1; i > 0; --i) {
    // Multiply-shift reduction: unbiased enough for shuffling and identical on every platform.
    const auto r = splitmix64(state);
    const auto j = static_cast<std::int64_t>((static_cast<Uint128>(r) * static_cast<std::uint64_t>(i + 1)) >> 64);
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

BatchLoader::BatchLoader(const Dataset& data, LoaderOptions options) : data_(data), options_(options) {
  if (options_.world_size < 1 || options_.global_batch % options_.world_size != 0) {
    throw std::invalid_argument("batch size must be a multiple of the world size");
  }
  local_batch_ = options_.global_batch / options_.world_size;
  batches_per_epoch_ = data_.size() / options_.global_batch;
  if (options_.batches_per_epoch_cap >= 0) batches_per_epoch_ = std::min(batches_per_epoch_, options_.batches_per_epoch_cap);
}

BatchLoader::~BatchLoader() { stop_workers(); }

void BatchLoader::stop_workers() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  space_cv_.notify_all();
  ready_cv_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
  std::lock_guard lock(mutex_);
  stopping_ = false;
  ready_.clear();
}

void BatchLoader::start_epoch(std::int64_t epoch, std::int64_t first_batch) {
  stop_workers();
  auto order = epoch_order(data_.size(), options_.seed, epoch, options_.shuffle);
  order_ = torch::from_blob(order.data(), {static_cast<std::int64_t>(order.size())}, torch::kLong).clone();
  next_to_consume_ = first_batch;
  next_to_claim_ = first_batch;
  worker_error_.reset();
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { worker_loop(); });
}

Batch BatchLoader::build(std::int64_t batch_index) const {
  const auto start = batch_index * options_.global_batch + options_.rank * local_batch_;
  auto rows = order_.narrow(0, start, local_batch_);
  auto batch = gather_batch(data_, rows, options_.pin_memory);
  batch.index = batch_index;
  return batch;
}

void BatchLoader::worker_loop() {
  for (;;) {
    std::int64_t index = 0;
    {
      std::unique_lock lock(mutex_);
      space_cv_.wait(lock, [&] {
        return stopping_ || next_to_claim_ >= batches_per_epoch_ ||
               next_to_claim_ < next_to_consume_ + options_.prefetch;
      });
      if (stopping_ || next_to_claim_ >= batches_per_epoch_) return;
      index = next_to_claim_++;
    }
    try {
      auto batch = build(index);
      std::lock_guard lock(mutex_);
      ready_.emplace(index, std::move(batch));
    } catch (const std::exception& e) {
      std::lock_guard lock(mutex_);
      worker_error_ = e.what();
    }
    ready_cv_.notify_all();
  }
}

std::optional<Batch> BatchLoader::next(double* waited_seconds) {
  if (waited_seconds) *waited_seconds = 0.0;
  if (next_to_consume_ >= batches_per_epoch_) return std::nullopt;
  if (workers_.empty()) {
    const auto t0 = std::chrono::steady_clock::now();
    auto batch = build(next_to_consume_++);
    if (waited_seconds) *waited_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return batch;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  ready_cv_.wait(lock, [&] { return worker_error_.has_value() || ready_.count(next_to_consume_) != 0; });
  if (worker_error_) throw std::runtime_error("data loader: " + *worker_error_);
  auto node = ready_.extract(next_to_consume_);
  ++next_to_consume_;
  lock.unlock();
  space_cv_.notify_all();
  if (waited_seconds) *waited_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return std::move(node.mapped());
}

}  // namespace ferry::train
