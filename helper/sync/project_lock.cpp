// The per-project sync lock: see project_lock.hpp.
#include "helper/sync/project_lock.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "common/dir_at.hpp"
#include "common/file_lock.hpp"
#include "common/full_io.hpp"
#include "common/private_files.hpp"

namespace ferry::sync {

namespace fs = std::filesystem;

namespace {

// While waiting for the holder: how often cancellation is looked at.
constexpr auto kPollWhileHeld = std::chrono::milliseconds(20);

}  // namespace

std::string ProjectLock::holder_of(int fd) {
  char buf[256];
  const ssize_t n = ferry::posix::pread_full(fd, buf, sizeof buf - 1, 0);
  std::string s = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s.empty() ? "another ferry process" : s;
}

void ProjectLock::name_self(int fd) {
  const std::string me = describe_self() + "\n";
  if (ferry::posix::truncate_fd(fd, 0) == 0) ferry::posix::pwrite_full(fd, me.data(), me.size(), 0);
}

std::string ProjectLock::describe_self() {
  std::string name = "ferry";
  std::ifstream cmdline("/proc/self/cmdline");
  std::string arg0, arg1;
  std::getline(cmdline, arg0, '\0');
  std::getline(cmdline, arg1, '\0');
  // The sub-command says what the holder is doing ("ferry serve", "ferry sync"); a test binary
  // is just its name.
  if (arg0.ends_with("/ferry") || arg0 == "ferry") name = "ferry " + arg1;
  else if (!arg0.empty()) name = fs::path(arg0).filename().string();
  return name + " (pid " + std::to_string(::getpid()) + ")";
}

std::expected<ProjectLock, Error> ProjectLock::acquire(const fs::path& local_root,
                                                       const std::function<void(const std::string&)>& waiting,
                                                       const std::function<bool()>& cancelled) {
  const fs::path dir = local_root / ".ferry";
  // Every sync passes here: .ferry/ made owner-only, also when an older ferry made it 0755.
  ferry::posix::make_private_dirs(dir);
  const fs::path file = dir / "sync.lock";
  ferry::posix::UniqueFd held(ferry::posix::open_private(file, O_RDWR));
  const int fd = held.get();
  if (fd < 0) return std::unexpected(Error{ErrorKind::io, "cannot open " + file.string() + ": " + std::strerror(errno)});
  bool told = false;
  while (const int err = ferry::posix::try_lock_exclusive(fd)) {
    if (err != EWOULDBLOCK) {
      return std::unexpected(Error{ErrorKind::io, "cannot lock " + file.string() + ": " + std::strerror(err)});
    }
    if (!told && waiting) waiting(holder_of(fd));
    told = true;
    if (cancelled && cancelled()) {
      std::string holder = holder_of(fd);
      return std::unexpected(Error{ErrorKind::cancelled, "cancelled while waiting for " + holder});
    }
    std::this_thread::sleep_for(kPollWhileHeld);
  }
  name_self(fd);
  return ProjectLock(std::move(held));
}

}  // namespace ferry::sync
