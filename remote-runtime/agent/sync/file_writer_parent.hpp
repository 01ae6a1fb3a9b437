// FileWriter's private pieces shared by its source files (file_writer.cpp, file_writer_delta.cpp):
// the resolved parent directory of a path being written. Not for other users.
#pragma once

#include <memory>
#include <string>
#include <utility>

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

}  // namespace ferry::agent::sync
