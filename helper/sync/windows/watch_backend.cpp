// TreeWatcher's OS half on Windows (see watch_backend.hpp): ReadDirectoryChangesW on the root
// with bWatchSubtree=TRUE, overlapped, one request in flight at a time. One watch covers the
// whole tree, ignored directories included (watcher.cpp drops their events); the directories
// the walks record here only answer watches() and say, when something is removed, that it was
// a directory (Windows does not). Changes made while no request is in flight are kept by the
// file system for the next one (its buffer lives as long as the handle). A buffer that
// overflowed (ERROR_NOTIFY_ENUM_DIR, or a completion with zero bytes) is reported as
// `overflow`: the caller rescans. Names are UTF-16 relative to the root, '\'-separated: they
// are handed on as UTF-8 with '/'. stop() sets a manual-reset event that is never reset.
#include "helper/sync/watch_backend.hpp"

#include <windows.h>

#include <algorithm>
#include <set>

#include <spdlog/spdlog.h>

namespace ferry::sync {
namespace {

namespace fs = std::filesystem;

constexpr DWORD kFilter = FILE_NOTIFY_CHANGE_FILE_NAME | FILE_NOTIFY_CHANGE_DIR_NAME | FILE_NOTIFY_CHANGE_SIZE |
                          FILE_NOTIFY_CHANGE_LAST_WRITE | FILE_NOTIFY_CHANGE_CREATION;
// A root deleted or renamed while its handle is open completes nothing (Wine) or not surely
// (Windows): a wait looks for it at least this often.
constexpr std::chrono::milliseconds kRootCheck{2000};
// The file system's buffer for the handle takes the first request's size; 64 KiB is also the
// most a network share accepts.
constexpr DWORD kBufferBytes = 64 * 1024;

std::optional<std::string> to_utf8(std::wstring_view w) {
  if (w.empty()) return std::string();
  const int n = ::WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, w.data(), static_cast<int>(w.size()), nullptr, 0,
                                      nullptr, nullptr);
  if (n <= 0) return std::nullopt;  // an unpaired surrogate
  std::string s(static_cast<std::size_t>(n), '\0');
  ::WideCharToMultiByte(CP_UTF8, WC_ERR_INVALID_CHARS, w.data(), static_cast<int>(w.size()), s.data(), n, nullptr, nullptr);
  return s;
}

std::wstring to_wide(std::string_view s) {
  if (s.empty()) return {};
  const int n = ::MultiByteToWideChar(CP_UTF8, 0, s.data(), static_cast<int>(s.size()), nullptr, 0);
  std::wstring w(static_cast<std::size_t>(std::max(n, 0)), L'\0');
  if (n > 0) ::MultiByteToWideChar(CP_UTF8, 0, s.data(), static_cast<int>(s.size()), w.data(), n);
  return w;
}

std::string error_text(DWORD code) {
  wchar_t* text = nullptr;
  const DWORD n = ::FormatMessageW(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
                                   nullptr, code, 0, reinterpret_cast<wchar_t*>(&text), 0, nullptr);
  std::string s = n ? to_utf8(std::wstring_view(text, n)).value_or("") : "";
  if (text) ::LocalFree(text);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '.')) s.pop_back();
  return (s.empty() ? "error" : s) + " (" + std::to_string(code) + ")";
}

// The root as an extended-length path (\\?\C:\..., \\?\UNC\server\share\...), so a deep tree
// is not cut at MAX_PATH.
std::wstring extended(const fs::path& root) {
  std::wstring p = fs::absolute(root).lexically_normal().wstring();
  std::replace(p.begin(), p.end(), L'/', L'\\');
  while (p.size() > 3 && p.back() == L'\\') p.pop_back();
  if (p.starts_with(L"\\\\?\\") || p.starts_with(L"\\\\.\\")) return p;
  if (p.starts_with(L"\\\\")) return L"\\\\?\\UNC\\" + p.substr(2);
  return L"\\\\?\\" + p;
}

// A directory that can be walked into: a symlink or junction to one is a link, as on POSIX
// (other reparse points, such as OneDrive's placeholders, are real directories).
bool walkable_dir(DWORD attributes, DWORD reparse_tag) {
  if (!(attributes & FILE_ATTRIBUTE_DIRECTORY)) return false;
  if (!(attributes & FILE_ATTRIBUTE_REPARSE_POINT)) return true;
  return reparse_tag != IO_REPARSE_TAG_SYMLINK && reparse_tag != IO_REPARSE_TAG_MOUNT_POINT;
}

class Win32Backend final : public WatchBackend {
 public:
  Win32Backend(fs::path root, HANDLE stop, HANDLE io_event)
      : root_(extended(root)), stop_(stop), io_event_(io_event), buffer_(kBufferBytes / sizeof(DWORD)) {}

  ~Win32Backend() override {
    close_dir();
    ::CloseHandle(io_event_);
    ::CloseHandle(stop_);
  }

  std::expected<void, std::string> restart() override {
    close_dir();
    dirs_.clear();
    dir_ = ::CreateFileW(root_.c_str(), FILE_LIST_DIRECTORY, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                         OPEN_EXISTING, FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OVERLAPPED, nullptr);
    if (dir_ == INVALID_HANDLE_VALUE) return std::unexpected("open the folder: " + error_text(::GetLastError()));
    if (!issue()) return std::unexpected(issue_error_);
    return {};
  }

  std::expected<void, WatchError> watch_directory(const std::string& rel) override {
    if (dir_ == INVALID_HANDLE_VALUE) return std::unexpected(WatchError{false, "the folder is not open"});
    if (!is_walkable_dir(rel)) {
      const DWORD e = ::GetLastError();
      const bool gone = e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND || e == ERROR_SUCCESS;
      return std::unexpected(WatchError{gone, gone ? "not a folder" : error_text(e)});
    }
    dirs_.insert(rel);  // the root's subtree watch covers it
    return {};
  }

  bool watches(std::string_view rel) const override { return dirs_.find(rel) != dirs_.end(); }
  std::size_t watched_directories() const override { return dirs_.size(); }

  bool list(const std::string& rel, std::vector<WatchEntry>& out) override {
    WIN32_FIND_DATAW fd{};
    HANDLE h = ::FindFirstFileExW((full(rel) + L"\\*").c_str(), FindExInfoBasic, &fd, FindExSearchNameMatch, nullptr,
                                  FIND_FIRST_EX_LARGE_FETCH);
    if (h == INVALID_HANDLE_VALUE) return false;
    do {
      const std::wstring_view name = fd.cFileName;
      if (name == L"." || name == L"..") continue;
      auto utf8 = to_utf8(name);
      if (!utf8) {
        spdlog::warn("watch '{}': a name that is not valid UTF-16 is left out", rel);
        continue;
      }
      out.push_back(WatchEntry{std::move(*utf8), walkable_dir(fd.dwFileAttributes, fd.dwReserved0)});
    } while (::FindNextFileW(h, &fd));
    ::FindClose(h);
    return true;
  }

  std::expected<WatchWake, std::string> wait(std::chrono::milliseconds timeout) override {
    if (!in_flight_) {
      if (::WaitForSingleObject(stop_, 0) == WAIT_OBJECT_0) return WatchWake::stopped;
      return WatchWake::events;  // read() reports why no request is in flight
    }
    const HANDLE handles[2] = {stop_, io_event_};  // the stop first: it wins a tie
    const auto ms = static_cast<DWORD>(std::clamp<long long>(timeout.count(), 0, kRootCheck.count()));
    switch (::WaitForMultipleObjects(2, handles, FALSE, ms)) {
      case WAIT_OBJECT_0: return WatchWake::stopped;
      case WAIT_OBJECT_0 + 1: return WatchWake::events;
      case WAIT_TIMEOUT: return root_missing() ? WatchWake::events : WatchWake::timeout;  // read() says so
      default: return std::unexpected("WaitForMultipleObjects: " + error_text(::GetLastError()));
    }
  }

  std::expected<void, std::string> read(std::vector<WatchEvent>& out, WatchDrain drain) override {
    // A change before this call may have completed the request in flight without its result
    // having reached us yet: cancelling completes it either way (with what it holds, or empty;
    // what comes later waits in the file system's buffer for the next request).
    bool wait_for_it = false;
    if (drain == WatchDrain::all_before_now && in_flight_ && !HasOverlappedIoCompleted(&ov_)) {
      ::CancelIoEx(dir_, &ov_);
      wait_for_it = true;
    }
    for (;;) {
      if (!in_flight_ && !issue()) {
        if (root_missing()) {
          out.push_back(WatchEvent::root_went());
          return {};
        }
        return std::unexpected(issue_error_);
      }
      DWORD bytes = 0;
      if (!::GetOverlappedResult(dir_, &ov_, &bytes, wait_for_it ? TRUE : FALSE)) {
        const DWORD e = ::GetLastError();
        if (e == ERROR_IO_INCOMPLETE) break;  // nothing more delivered
        in_flight_ = false;
        wait_for_it = false;
        if (e == ERROR_OPERATION_ABORTED) continue;  // our cancel: ask again at once
        if (e == ERROR_NOTIFY_ENUM_DIR) {
          out.push_back(WatchEvent::overflowed("change buffer overflow"));
          continue;
        }
        if (root_missing()) {
          out.push_back(WatchEvent::root_went());
          return {};
        }
        return std::unexpected("ReadDirectoryChangesW: " + error_text(e));
      }
      in_flight_ = false;
      wait_for_it = false;
      if (bytes == 0) out.push_back(WatchEvent::overflowed("change buffer overflow"));
      else parse(bytes, out);
    }
    // Windows lets a watched folder be renamed (FILE_SHARE_DELETE) without a word to its watch.
    if (root_missing()) out.push_back(WatchEvent::root_went());
    return {};
  }

  void stop() override { ::SetEvent(stop_); }

 private:
  std::wstring full(const std::string& rel) const {
    if (rel.empty()) return root_;
    std::wstring w = to_wide(rel);
    std::replace(w.begin(), w.end(), L'/', L'\\');
    return root_ + L"\\" + w;
  }

  // Whether `rel` is a directory to walk into; false with GetLastError() set (ERROR_SUCCESS:
  // there, but a file or a link).
  bool is_walkable_dir(const std::string& rel) const {
    const std::wstring path = full(rel);
    const DWORD attributes = ::GetFileAttributesW(path.c_str());
    if (attributes == INVALID_FILE_ATTRIBUTES) return false;
    DWORD tag = 0;
    if (attributes & FILE_ATTRIBUTE_REPARSE_POINT) {
      WIN32_FIND_DATAW fd{};
      HANDLE h = ::FindFirstFileExW(path.c_str(), FindExInfoBasic, &fd, FindExSearchNameMatch, nullptr, 0);
      if (h == INVALID_HANDLE_VALUE) return false;
      ::FindClose(h);
      tag = fd.dwReserved0;
    }
    if (walkable_dir(attributes, tag)) return true;
    ::SetLastError(ERROR_SUCCESS);
    return false;
  }

  // The root deleted (its handle delete-pending, or the name gone where deletes are POSIX-like)
  // or renamed. (Wine keeps a deleted directory that is open until it is closed, and says
  // nothing: there only a rename is seen.)
  bool root_missing() const {
    if (::GetFileAttributesW(root_.c_str()) == INVALID_FILE_ATTRIBUTES) {
      const DWORD e = ::GetLastError();
      if (e == ERROR_FILE_NOT_FOUND || e == ERROR_PATH_NOT_FOUND || e == ERROR_ACCESS_DENIED) return true;
    }
    FILE_STANDARD_INFO info{};
    return dir_ != INVALID_HANDLE_VALUE && ::GetFileInformationByHandleEx(dir_, FileStandardInfo, &info, sizeof info) &&
           info.DeletePending;
  }

  // Asks for the next changes; false (issue_error_ set) when the request cannot be made.
  bool issue() {
    ov_ = OVERLAPPED{};
    ov_.hEvent = io_event_;
    ::ResetEvent(io_event_);
    if (!::ReadDirectoryChangesW(dir_, buffer_.data(), kBufferBytes, TRUE, kFilter, nullptr, &ov_, nullptr)) {
      issue_error_ = "ReadDirectoryChangesW: " + error_text(::GetLastError());
      return false;
    }
    in_flight_ = true;
    return true;
  }

  void close_dir() {
    if (dir_ == INVALID_HANDLE_VALUE) return;
    if (in_flight_) {
      DWORD bytes = 0;
      ::CancelIoEx(dir_, &ov_);
      ::GetOverlappedResult(dir_, &ov_, &bytes, TRUE);  // the buffer is ours again
      in_flight_ = false;
    }
    ::CloseHandle(dir_);
    dir_ = INVALID_HANDLE_VALUE;
  }

  // A removed or renamed-away directory takes what the walks recorded under it along.
  bool forget_dir(const std::string& rel) {
    auto it = dirs_.find(rel);
    if (it == dirs_.end()) return false;
    it = dirs_.erase(it);
    const std::string prefix = rel + "/";
    while (it != dirs_.end() && it->starts_with(prefix)) it = dirs_.erase(it);
    return true;
  }

  void parse(DWORD bytes, std::vector<WatchEvent>& out) {
    const auto* base = reinterpret_cast<const std::byte*>(buffer_.data());
    for (DWORD offset = 0; offset < bytes;) {
      const auto* info = reinterpret_cast<const FILE_NOTIFY_INFORMATION*>(base + offset);
      const std::wstring_view name(info->FileName, info->FileNameLength / sizeof(wchar_t));
      if (auto rel = to_utf8(name); !rel) {
        spdlog::warn("watch: a changed name that is not valid UTF-16 is left out");
      } else if (!rel->empty()) {
        std::replace(rel->begin(), rel->end(), '\\', '/');
        WatchEvent e;
        switch (info->Action) {
          case FILE_ACTION_ADDED:
          case FILE_ACTION_RENAMED_NEW_NAME:
            e.kind = info->Action == FILE_ACTION_ADDED ? WatchEvent::Kind::created : WatchEvent::Kind::moved_to;
            e.is_dir = is_walkable_dir(*rel);
            break;
          case FILE_ACTION_REMOVED:
          case FILE_ACTION_RENAMED_OLD_NAME:
            e.kind = info->Action == FILE_ACTION_REMOVED ? WatchEvent::Kind::removed : WatchEvent::Kind::moved_from;
            if (forget_dir(*rel)) e.is_dir = true;  // else: a file, or a directory no walk recorded
            break;
          default:  // FILE_ACTION_MODIFIED
            e.kind = WatchEvent::Kind::changed;
            e.is_dir = is_walkable_dir(*rel);
            break;
        }
        // A directory's own write time moves with every change inside it: those are reported
        // by name, the directory itself has nothing to push.
        if (!(e.kind == WatchEvent::Kind::changed && *e.is_dir)) {
          e.path = std::move(*rel);
          out.push_back(std::move(e));
        }
      }
      if (info->NextEntryOffset == 0) break;
      offset += info->NextEntryOffset;
    }
  }

  std::wstring root_;  // extended-length
  HANDLE stop_;
  HANDLE io_event_;
  HANDLE dir_ = INVALID_HANDLE_VALUE;
  OVERLAPPED ov_{};
  bool in_flight_ = false;
  std::string issue_error_;
  std::vector<DWORD> buffer_;  // DWORD-aligned, as ReadDirectoryChangesW requires
  std::set<std::string, std::less<>> dirs_;
};

}  // namespace

std::expected<std::unique_ptr<WatchBackend>, std::string> WatchBackend::open(const fs::path& root) {
  HANDLE stop = ::CreateEventW(nullptr, TRUE, FALSE, nullptr);
  if (!stop) return std::unexpected("CreateEvent: " + error_text(::GetLastError()));
  HANDLE io_event = ::CreateEventW(nullptr, TRUE, FALSE, nullptr);
  if (!io_event) {
    const DWORD e = ::GetLastError();
    ::CloseHandle(stop);
    return std::unexpected("CreateEvent: " + error_text(e));
  }
  return std::make_unique<Win32Backend>(root, stop, io_event);
}

}  // namespace ferry::sync
