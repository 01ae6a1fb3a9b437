// A run's output mirrored into a file under the project's .ferry/logs/ (ferry's state folder,
// never synced) for editors that know only LSP: the editor opens the file and shows it growing.
#pragma once

#include <cstdio>
#include <expected>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace ferry::server {

class RunLog {
 public:
  // .ferry/logs/<label>-<UTC time>.log, created empty (0600: output can hold secrets).
  static std::expected<std::shared_ptr<RunLog>, std::string> create(const std::filesystem::path& project_root,
                                                                    std::string_view label);
  ~RunLog();
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Appends and flushes at once, so the editor sees each record as it comes.
  void write(std::string_view bytes);

 private:
  RunLog(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::filesystem::path path_;
  int fd_;
  std::mutex mutex_;
};

}  // namespace ferry::server
