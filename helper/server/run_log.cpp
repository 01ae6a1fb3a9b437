// A run's output in a log file: see run_log.hpp.
#include "helper/server/run_log.hpp"

#include <fcntl.h>

#include <cerrno>
#include <chrono>
#include <cctype>
#include <cstring>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "common/full_io.hpp"
#include "common/open_file.hpp"
#include "common/private_files.hpp"

namespace ferry::server {

namespace fs = std::filesystem;

std::expected<std::shared_ptr<RunLog>, std::string> RunLog::create(const fs::path& project_root, std::string_view label) {
  const fs::path dir = project_root / ".ferry" / "logs";
  const std::error_code ec = posix::make_private_dirs(dir);  // .ferry/ is ferry's: owner-only
  if (ec) return std::unexpected("cannot make " + dir.string() + ": " + ec.message());
  std::string safe;
  for (char c : label) safe.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_');
  const auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  std::string stem = fmt::format("{}-{:%Y%m%d-%H%M%S}", safe.empty() ? "run" : safe, now);
  for (int n = 0; n < 100; ++n) {
    fs::path path = dir / (n ? fmt::format("{}-{}.log", stem, n) : stem + ".log");
    int fd = posix::open_file(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND, 0600);
    if (fd >= 0) return std::shared_ptr<RunLog>(new RunLog(path, fd));
    if (errno != EEXIST) return std::unexpected("cannot create " + path.string() + ": " + std::strerror(errno));
  }
  return std::unexpected("cannot create a log file in " + dir.string() + ": too many with the same name");
}

RunLog::~RunLog() {
  if (fd_ >= 0) posix::close_fd(fd_);
}

void RunLog::write(std::string_view bytes) {
  std::lock_guard lock(mutex_);
  (void)posix::write_full(fd_, bytes.data(), bytes.size());  // a full disk loses log lines, not the run
}

}  // namespace ferry::server
