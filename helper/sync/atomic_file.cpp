// Atomic replace of local state files.
#include "helper/sync/atomic_file.hpp"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/dir_at.hpp"
#include "common/full_io.hpp"
#include "common/open_file.hpp"
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
std::expected<void, std::string> write_atomically(const std::filesystem::path& file, std::string_view bytes, std::uint32_t mode,
                                                  bool own_dir) {
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : ".";
  std::error_code ec;
  if (own_dir) ec = posix::make_private_dirs(dir);
  else std::filesystem::create_directories(dir, ec);
  if (ec) return std::unexpected("cannot create " + dir.string() + ": " + ec.message());
  // The temp file, its rename and the directory's sync all go through one descriptor of `dir`.
  const posix::UniqueFd dfd = posix::open_dir_path(dir);
  if (!dfd) return std::unexpected(errno_text("cannot open", dir));
  const std::string name = file.filename().string();
  const std::string tmp = posix::temp_name(name);
  const std::filesystem::path tmp_path = dir / tmp;
  posix::UniqueFd fd(posix::open_at(dfd.get(), tmp, O_WRONLY | O_CREAT | O_EXCL, 0600));
  if (!fd) return std::unexpected(errno_text("cannot create temp file in", dir));
  auto fail = [&](const char* what) {
    std::string msg = errno_text(what, tmp_path);
    fd.reset();
    posix::unlink_at(dfd.get(), tmp.c_str());
    return std::unexpected(msg);
  };
  if (posix::chmod_fd(fd.get(), mode) != 0) return fail("cannot set the mode of");  // exactly, whatever the umask
  if (posix::write_full(fd.get(), bytes.data(), bytes.size()) < 0) return fail("cannot write");
  if (posix::sync_fd(fd.get()) != 0) return fail("cannot fsync");
  if (fd.close() != 0) return fail("cannot close");
  if (posix::rename_at(dfd.get(), tmp.c_str(), dfd.get(), name.c_str()) != 0) {
    std::string msg = errno_text("cannot rename over", file);
    posix::unlink_at(dfd.get(), tmp.c_str());
    return std::unexpected(msg);
  }
  posix::sync_fd(dfd.get());  // best effort: some filesystems refuse fsync on directories
  return {};
}

}  // namespace

std::expected<void, std::string> write_file_atomically(const std::filesystem::path& file, std::string_view bytes, std::uint32_t mode) {
  return write_atomically(file, bytes, mode, true);
}

std::expected<void, std::string> write_project_file_atomically(const std::filesystem::path& file, std::string_view bytes) {
  std::uint32_t mode = 0644;
  if (const posix::UniqueFd fd(posix::open_file(file, O_RDONLY)); fd) {
    if (posix::FileStat st; posix::stat_fd(fd.get(), st) == 0) mode = st.mode;
  }
  return write_atomically(file, bytes, mode, false);
}

std::expected<std::string, std::string> read_whole_file(const std::filesystem::path& file) {
  const posix::UniqueFd fd(posix::open_file(file, O_RDONLY));
  if (!fd) return std::unexpected(errno == ENOENT ? std::string("missing") : errno_text("cannot open", file));
  std::string out;
  if (!posix::read_to_end(fd.get(), out)) return std::unexpected(errno_text("cannot read", file));
  return out;
}

}  // namespace ferry::sync
