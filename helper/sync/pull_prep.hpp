// A pull's first look at the local copies of the big files it names, taken while the remote
// listing is still out: each copy's whole-file hash (the plan asks it: is the copy still what
// ferry last synced?) and its signature (the delta sends it), read on background threads.
// Why: on a pull of a changed checkpoint the helper otherwise idles through the listing, then
// hashes and signs the local copy one after the other (~0.5 s per GiB) before asking for the
// delta. A copy that changes while read, or that nobody asks for, is simply not used.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.hpp"
#include "helper/sync/file_index.hpp"
#include "protocol/delta/signature.hpp"

namespace ferry::sync {

// What was read of one local copy. `key` is the file before and after the read (it did not move
// meanwhile); `read_at_ns` is when the read began (for the index's racy-hash rule).
struct PreparedCopy {
  IndexKey key;
  std::int64_t read_at_ns = 0;
  Hash128 hash{};
  delta::SignatureParams params{};
  std::vector<std::uint8_t> signature;  // of the whole file, as one SignatureBuilder writes it
};

class PullPrep {
 public:
  struct Job {
    std::string path;
    posix::UniqueFd fd;  // opened by the caller (no symlink followed on the way)
    delta::SignatureParams params;
  };

  // Starts reading the jobs' files, in order; `threads` bounds the threads each file uses.
  PullPrep(std::vector<Job> jobs, unsigned threads);
  // Stops the reading (between pieces) and waits for it.
  ~PullPrep();
  // Stops the reading: the file being read gives nothing, the ones still queued are not read.
  void stop() { stop_ = true; }
  PullPrep(const PullPrep&) = delete;
  PullPrep& operator=(const PullPrep&) = delete;

  // `path`'s result once its read is over: nullopt when it was not asked for, failed, or the
  // file changed while it was read.
  std::optional<PreparedCopy> wait_for(const std::string& path);
  bool has(const std::string& path) const;

 private:
  void run();

  std::vector<Job> jobs_;
  unsigned threads_;
  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  std::map<std::string, std::optional<PreparedCopy>> done_;
  std::atomic<bool> stop_{false};
  std::jthread worker_;
};

// The copy read once: its hash on one thread while the signature is built on `threads` more.
// Nullopt when a read failed, `stop` was set, or the file changed while read.
std::optional<PreparedCopy> prepare_copy(int fd, delta::SignatureParams params, unsigned threads, const std::atomic<bool>& stop);

}  // namespace ferry::sync
