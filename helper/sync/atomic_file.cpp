// Atomic replace of local state files.
#include "helper/sync/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

namespace ferry::sync {
namespace {

std::string errno_text(const char* what, const std::filesystem::path& p) {
  return std::string(what) + " " + p.string() + ": " + std::strerror(errno);
}

}  // namespace

std::expected<void, std::string> write_file_atomically(const std::filesystem::path& file, std::string_view bytes) {
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : ".";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return std::unexpected("cannot create " + dir.string() + ": " + ec.message());
  std::string name(1, '.');
  name.append(file.filename().string()).append(".tmp-XXXXXX");
  std::string tmpl = (dir / name).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return std::unexpected(errno_text("cannot create temp file in", dir));
  auto fail = [&](const char* what) {
    std::string msg = errno_text(what, tmpl);
    ::close(fd);
    ::unlink(tmpl.c_str());
    return std::unexpected(msg);
  };
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("cannot write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) return fail("cannot fsync");
  if (::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    return std::unexpected(errno_text("cannot close", tmpl));
  }
  if (::rename(tmpl.c_str(), file.c_str()) != 0) {
    std::string msg = errno_text("cannot rename over", file);
    ::unlink(tmpl.c_str());
    return std::unexpected(msg);
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);  // best effort: some filesystems refuse fsync on directories
    ::close(dfd);
  }
  return {};
}

std::expected<std::string, std::string> read_whole_file(const std::filesystem::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::unexpected(errno == ENOENT ? std::string("missing") : errno_text("cannot open", file));
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string msg = errno_text("cannot read", file);
      ::close(fd);
      return std::unexpected(msg);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace ferry::sync
