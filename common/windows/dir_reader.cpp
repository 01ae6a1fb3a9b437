// The no-follow directory reader on Windows (see dir_reader.hpp): the directory opened as a
// handle (never through a link: the name is checked as its parent lists it, and the handle, opened
// on the reparse point itself, again), its entries read from that handle in batches with
// GetFileInformationByHandleEx(FileIdBothDirectoryInfo), which carries what a FileStat needs
// (attributes and reparse tag, size, write and change times, file id) without opening each entry.
#include "common/dir_reader.hpp"

#include <cerrno>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/dir_at.hpp"
#include "common/windows/win32.hpp"

namespace ferry::posix {

struct DirReader::State {
  UniqueFd fd;                                       // owns the directory handle
  HANDLE dir;
  std::uint64_t dev;                                 // the volume's serial number, for every entry
  std::vector<std::uint64_t> batch = std::vector<std::uint64_t>(8192);  // 64 KiB, 8-byte aligned
  std::size_t at = 0;                                // the next record's offset in `batch`
  bool filled = false, restart = true;
  std::string name;                                  // the last entry's name, UTF-8

  // The next record, reading a new batch when this one is used up; nullptr at the end.
  const FILE_ID_BOTH_DIR_INFO* next_record();
  DirEntry entry_of(const FILE_ID_BOTH_DIR_INFO& record, std::wstring_view wide_name);
};

const FILE_ID_BOTH_DIR_INFO* DirReader::State::next_record() {
  if (!filled) {
    const auto kind = restart ? FileIdBothDirectoryRestartInfo : FileIdBothDirectoryInfo;
    if (!::GetFileInformationByHandleEx(dir, kind, batch.data(), static_cast<DWORD>(batch.size() * 8))) return nullptr;
    filled = true;
    restart = false;
    at = 0;
  }
  const auto* record = reinterpret_cast<const FILE_ID_BOTH_DIR_INFO*>(reinterpret_cast<const char*>(batch.data()) + at);
  if (record->NextEntryOffset == 0) filled = false;
  at += record->NextEntryOffset;
  return record;
}

DirEntry DirReader::State::entry_of(const FILE_ID_BOTH_DIR_INFO& record, std::wstring_view wide_name) {
  bool valid = true;
  name = win::utf8_of(wide_name, valid);
  FileStat st;
  // With FILE_ATTRIBUTE_REPARSE_POINT set, EaSize holds the reparse tag.
  st.kind = win::kind_of(record.FileAttributes, record.EaSize);
  st.size = static_cast<std::uint64_t>(record.EndOfFile.QuadPart);
  st.mtime_ns = win::ns_of_ticks(record.LastWriteTime.QuadPart);
  st.ctime_ns = win::ns_of_ticks(record.ChangeTime.QuadPart);
  st.mode = win::mode_of(record.FileAttributes);
  st.dev = dev;
  st.ino = static_cast<std::uint64_t>(record.FileId.QuadPart);
  if (!valid) return DirEntry{name.c_str(), {}, EILSEQ};
  return DirEntry{name.c_str(), st, 0};
}

std::expected<DirReader, int> adopt_dir(UniqueFd dir) {
  if (!dir) return std::unexpected(EBADF);
  const HANDLE h = win::handle_of(dir.get());
  if (h == INVALID_HANDLE_VALUE) return std::unexpected(EBADF);
  FileStat st;
  if (const int err = win::stat_handle(h, st)) return std::unexpected(err);
  if (st.kind == FileKind::symlink) return std::unexpected(ELOOP);  // made a link since the check
  if (st.kind != FileKind::directory) return std::unexpected(ENOTDIR);
  return DirReader(std::make_unique<DirReader::State>(std::move(dir), h, st.dev));
}

std::expected<DirReader, int> open_dir_at(int at, const std::string& rel) {
  UniqueFd fd = open_dir_nofollow(at, rel);
  if (!fd) return std::unexpected(errno);
  return adopt_dir(std::move(fd));
}

int dir_fd(const DirReader& reader) { return reader.state().fd.get(); }

std::expected<DirReader, int> DirReader::open(const std::filesystem::path& dir) {
  if (dir.empty()) return std::unexpected(ENOENT);
  if (win::path_is_link(dir)) return std::unexpected(ELOOP);
  UniqueFd fd(win::open_dir_handle(dir, FILE_FLAG_OPEN_REPARSE_POINT));
  if (!fd) return std::unexpected(errno);
  return adopt_dir(std::move(fd));
}

DirReader::DirReader(std::unique_ptr<State> state) noexcept : state_(std::move(state)) {}
DirReader::DirReader(DirReader&& o) noexcept = default;
DirReader& DirReader::operator=(DirReader&& o) noexcept = default;
DirReader::~DirReader() = default;

std::optional<DirEntry> DirReader::next() {
  if (!state_) return std::nullopt;
  while (const FILE_ID_BOTH_DIR_INFO* record = state_->next_record()) {
    const std::wstring_view name(record->FileName, record->FileNameLength / sizeof(wchar_t));
    if (name == L"." || name == L"..") continue;
    return state_->entry_of(*record, name);
  }
  return std::nullopt;
}

}  // namespace ferry::posix
