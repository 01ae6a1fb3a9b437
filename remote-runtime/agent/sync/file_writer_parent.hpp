// FileWriter's private pieces shared by its source files (file_writer.cpp, file_writer_delta.cpp,
// file_writer_prepare.cpp): the resolved parent directory of a path being written, and the
// copies prepare_delta_base makes ahead of a delta. Not for other users.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/copy_range.hpp"
#include "common/unique_fd.hpp"
#include "remote-runtime/agent/sync/file_writer.hpp"

namespace ferry::agent::sync {

// A directory descriptor shared by the files of a batch that live in it; closed with the last.
class DirRef {
 public:
  DirRef() = default;
  explicit DirRef(ferry::posix::UniqueFd fd) : fd_(std::make_shared<ferry::posix::UniqueFd>(std::move(fd))) {}
  int get() const { return fd_ ? fd_->get() : -1; }

 private:
  std::shared_ptr<ferry::posix::UniqueFd> fd_;
};

struct FileWriter::Parent {
  DirRef dir;
  std::string name;  // final component
  std::string rel;   // normalised path
};

// One copy prepare_delta_base started: the temp file, the old file it copies, and the thread.
struct FileWriter::PreparedBase {
  PendingFile file;              // the temp file beside the target (attrs: the old file's size)
  ferry::posix::UniqueFd base;   // the old file, as opened for the copy
  struct stat before {};         // its state when the copy began
  std::chrono::steady_clock::time_point made;
  std::atomic<bool> stop{false};
  std::future<bool> copied;      // true: the temp holds all of the old file, still as `before`
  ~PreparedBase() {              // the thread stops before the temp file and descriptors go
    stop = true;
    if (copied.valid()) copied.wait();
  }
};

struct FileWriter::PreparedBases {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<PreparedBase>> by_rel;
  std::atomic<std::uint64_t> used{0};
  // Under `mu`: the copies older than kPreparedLifetime moved to `into` (freed by the caller after
  // unlocking: each may wait for its thread).
  void take_expired(std::vector<std::unique_ptr<PreparedBase>>& into) {
    const auto cutoff = std::chrono::steady_clock::now() - kPreparedLifetime;
    for (auto it = by_rel.begin(); it != by_rel.end();) {
      if (it->second->made < cutoff) {
        into.push_back(std::move(it->second));
        it = by_rel.erase(it);
      } else {
        ++it;
      }
    }
  }
};

}  // namespace ferry::agent::sync
