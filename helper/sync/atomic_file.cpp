// Atomic replace of local state files.
#include "helper/sync/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/full_io.hpp"
#include "common/private_files.hpp"
#include "common/temp_name.hpp"
#include "common/unique_fd.hpp"

namespace ferry::sync {
namespace {

namespace posix = ferry::posix;

std::string errno_text(const char* what, const std::filesystem::path& p) {
  return std::string(what) + " " + p.string() + ": " + std::strerror(errno);
}

// `own_dir`: the directory is ferry's own state (.ferry/, ~/.cache/ferry/...), kept owner-only;
// else it is the user's (.vscode/), made as any directory the user makes.
std::expected<void, std::string> write_atomically(const std::filesystem::path& file, std::string_view bytes, mode_t mode,
                                                  bool own_dir) {
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : ".";
  std::error_code ec;
  if (own_dir) ec = posix::make_private_dirs(dir);
  else std::filesystem::create_directories(dir, ec);
  if (ec) return std::unexpected("cannot create " + dir.string() + ": " + ec.message());
  const std::string tmpl = (dir / posix::temp_name(file.filename().string())).string();
  posix::UniqueFd fd(::open(tmpl.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) return std::unexpected(errno_text("cannot create temp file in", dir));
  auto fail = [&](const char* what) {
    std::string msg = errno_text(what, tmpl);
    fd.reset();
    ::unlink(tmpl.c_str());
    return std::unexpected(msg);
  };
  if (::fchmod(fd.get(), mode) != 0) return fail("cannot set the mode of");  // exactly, whatever the umask
  if (posix::write_full(fd.get(), bytes.data(), bytes.size()) < 0) return fail("cannot write");
  if (::fsync(fd.get()) != 0) return fail("cannot fsync");
  if (fd.close() != 0) {
    ::unlink(tmpl.c_str());
    return std::unexpected(errno_text("cannot close", tmpl));
  }
  if (::rename(tmpl.c_str(), file.c_str()) != 0) {
    std::string msg = errno_text("cannot rename over", file);
    ::unlink(tmpl.c_str());
    return std::unexpected(msg);
  }
  if (const posix::UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); dfd) {
    ::fsync(dfd.get());  // best effort: some filesystems refuse fsync on directories
  }
  return {};
}

}  // namespace

std::expected<void, std::string> write_file_atomically(const std::filesystem::path& file, std::string_view bytes, mode_t mode) {
  return write_atomically(file, bytes, mode, true);
}

std::expected<void, std::string> write_project_file_atomically(const std::filesystem::path& file, std::string_view bytes) {
  struct stat st {};
  const mode_t mode = ::stat(file.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
  return write_atomically(file, bytes, mode, false);
}

std::expected<std::string, std::string> read_whole_file(const std::filesystem::path& file) {
  const posix::UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::unexpected(errno == ENOENT ? std::string("missing") : errno_text("cannot open", file));
  std::string out;
  if (!posix::read_to_end(fd.get(), out)) return std::unexpected(errno_text("cannot read", file));
  return out;
}

}  // namespace ferry::sync
