// The no-follow directory reader on POSIX (see dir_reader.hpp and dir_at.hpp): readdir over
// a descriptor opened with O_NOFOLLOW, each entry statted with AT_SYMLINK_NOFOLLOW.
#include "common/dir_reader.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <utility>

#include "common/dir_at.hpp"
#include "common/posix/stat_times.hpp"

namespace ferry::posix {

struct DirReader::State {
  DIR* dir;
  ~State() { ::closedir(dir); }
};

std::expected<DirReader, int> adopt_dir(UniqueFd dir) {
  if (!dir) return std::unexpected(EBADF);
  DIR* d = ::fdopendir(dir.get());
  if (!d) return std::unexpected(errno);  // `dir` still owns (and closes) the descriptor
  dir.release();
  return DirReader(std::make_unique<DirReader::State>(d));
}

std::expected<DirReader, int> open_dir_at(int at, const std::string& rel) {
  UniqueFd fd = open_dir_nofollow(at, rel);
  if (!fd) return std::unexpected(errno);
  return adopt_dir(std::move(fd));
}

int dir_fd(const DirReader& reader) { return ::dirfd(reader.state().dir); }

std::expected<DirReader, int> DirReader::open(const std::filesystem::path& dir) {
  if (dir.empty()) return std::unexpected(ENOENT);
  return open_dir_at(AT_FDCWD, dir.native());
}

DirReader::DirReader(std::unique_ptr<State> state) noexcept : state_(std::move(state)) {}
DirReader::DirReader(DirReader&& o) noexcept = default;
DirReader& DirReader::operator=(DirReader&& o) noexcept = default;
DirReader::~DirReader() = default;

std::optional<DirEntry> DirReader::next() {
  if (!state_) return std::nullopt;
  while (dirent* de = ::readdir(state_->dir)) {
    const std::string_view name = de->d_name;
    if (name == "." || name == "..") continue;
    DirEntry e{de->d_name, {}, 0};
    e.stat_error = stat_nofollow(::dirfd(state_->dir), de->d_name, e.st);
    return e;
  }
  return std::nullopt;
}

}  // namespace ferry::posix
