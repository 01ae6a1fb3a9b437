// Read-only file mappings on Windows (see mapped_file.hpp): CreateFileMappingW and MapViewOfFile.
// Nothing like SIGBUS can happen here: while a view of a file is mapped, Windows refuses to
// truncate it (SetEndOfFile fails with ERROR_USER_MAPPED_FILE), so no mapped byte can vanish and
// truncated() is always false. A writer that rewrites the file in place (without truncating) is
// seen as on POSIX: by its changed mtime.
#include "common/mapped_file.hpp"

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/open_file.hpp"
#include "common/unique_fd.hpp"
#include "common/windows/win32.hpp"

namespace ferry::posix {
namespace {

// A read-only view of all `size` bytes of the file behind `h`; nullptr with errno set on failure.
const void* map_view(HANDLE h) {
  const HANDLE mapping = ::CreateFileMappingW(h, nullptr, PAGE_READONLY, 0, 0, nullptr);
  if (!mapping) {
    win::fail_with_last_error();
    return nullptr;
  }
  const void* view = ::MapViewOfFile(mapping, FILE_MAP_READ, 0, 0, 0);
  if (!view) win::fail_with_last_error();
  ::CloseHandle(mapping);  // the view keeps the mapping alive
  return view;
}

}  // namespace

std::expected<MappedFile, std::string> MappedFile::open(const std::filesystem::path& file) {
  const UniqueFd fd(open_file(file, O_RDONLY));
  if (!fd) {
    if (errno == ENOENT) return std::unexpected(std::string("missing"));
    return std::unexpected("cannot open " + win::utf8_of(file) + ": " + std::strerror(errno));
  }
  auto m = map(fd.get());
  if (!m) return std::unexpected(win::utf8_of(file) + ": " + m.error());
  return m;
}

std::expected<MappedFile, std::string> MappedFile::map(int fd) {
  const HANDLE h = win::handle_of(fd);
  FileStat st;
  if (h == INVALID_HANDLE_VALUE) return std::unexpected(std::string("cannot stat: ") + std::strerror(EBADF));
  if (const int err = win::stat_handle(h, st)) return std::unexpected(std::string("cannot stat: ") + std::strerror(err));
  if (st.kind != FileKind::regular) return std::unexpected(std::string("not a regular file"));
  MappedFile m;
  m.size_ = static_cast<std::size_t>(st.size);
  m.mtime_ns_ = st.mtime_ns;
  if (m.size_ == 0) return m;  // Windows cannot map an empty file, and there is nothing to map
  m.data_ = const_cast<void*>(map_view(h));
  if (!m.data_) return std::unexpected(std::string("cannot map: ") + std::strerror(errno));
  m.mapped_ = m.size_;
  return m;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(o.size_), mapped_(std::exchange(o.mapped_, 0)), mtime_ns_(o.mtime_ns_) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    size_ = o.size_;
    mapped_ = std::exchange(o.mapped_, 0);
    mtime_ns_ = o.mtime_ns_;
  }
  return *this;
}

MappedFile::~MappedFile() { release(); }

void MappedFile::release() {
  if (data_) ::UnmapViewOfFile(data_);
  data_ = nullptr;
}

bool MappedFile::truncated() const { return false; }

}  // namespace ferry::posix
