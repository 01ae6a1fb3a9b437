// Background batch loading: deterministic per-epoch shuffling (seeded by seed + epoch, independent of
// the worker count), a rank's disjoint shard of each global batch, and a bounded prefetch queue.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "remote-runtime/train/dataset.hpp"

namespace ferry::train {

struct LoaderOptions {
  std::int64_t global_batch = 64;  // samples per step across all ranks
  int rank = 0;
  int world_size = 1;
  int workers = 0;                  // 0: batches are built on the calling thread
  int prefetch = 4;                 // batches built ahead of the consumer, at most
  bool shuffle = true;
  std::uint64_t seed = 0;
  bool pin_memory = false;
  std::int64_t batches_per_epoch_cap = -1;  // <0: all full batches
};

// The sample order of `epoch`: a Fisher-Yates shuffle driven by splitmix64(seed, epoch).
std::vector<std::int64_t> epoch_order(std::int64_t samples, std::uint64_t seed, std::int64_t epoch, bool shuffle);

class BatchLoader {
 public:
  BatchLoader(const Dataset& data, LoaderOptions options);
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  std::int64_t batches_per_epoch() const { return batches_per_epoch_; }
  std::int64_t local_batch() const { return local_batch_; }
  // Starts `epoch` at batch `first_batch` (resume puts us mid-epoch).
  void start_epoch(std::int64_t epoch, std::int64_t first_batch);
  // The next batch of this epoch, or nullopt at its end. `waited_seconds` gets the time spent blocked.
  std::optional<Batch> next(double* waited_seconds = nullptr);

 private:
  Batch build(std::int64_t batch_index) const;
  void stop_workers();
  void worker_loop();

  const Dataset& data_;
  LoaderOptions options_;
  std::int64_t local_batch_ = 0;
  std::int64_t batches_per_epoch_ = 0;
  torch::Tensor order_;  // int64 sample order of the current epoch
  std::int64_t next_to_consume_ = 0;

  std::mutex mutex_;
  std::condition_variable ready_cv_;
  std::condition_variable space_cv_;
  std::map<std::int64_t, Batch> ready_;
  std::int64_t next_to_claim_ = 0;
  bool stopping_ = false;
  std::optional<std::string> worker_error_;
  std::vector<std::thread> workers_;
};

}  // namespace ferry::train
