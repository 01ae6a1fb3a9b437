// DirLink: `link` made a link to the directory `target` for as long as the object lives, for the
// tests of walks that must not follow one. POSIX: a symlink. Windows: a directory symbolic link
// (CreateSymbolicLinkW, in developer mode); where that makes nothing, as under Wine 8 whose
// CreateSymbolicLinkW is a stub, a Unix symlink made by the host's /bin/ln, which Wine lists as a
// reparse point. Wine starts such a host program without letting anyone wait for it, so its result
// is waited for by looking. The link is removed the way it was made before a TempDir removes the
// rest (Wine's RemoveDirectoryW would remove the target instead). Throws when no link can be made,
// so a test that needs one fails rather than passing without it. Header-only.
#pragma once

#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>

#ifdef _WIN32
#include <windows.h>
#endif

namespace ferry::test {

#ifdef _WIN32
namespace detail {

// Wine's own export: the Unix path of a Windows path (heap-allocated); empty outside Wine.
inline std::string unix_path_under_wine(const std::filesystem::path& p) {
  using Fn = char* (*)(const wchar_t*);
  const auto fn = reinterpret_cast<Fn>(
      reinterpret_cast<void*>(::GetProcAddress(::GetModuleHandleW(L"kernel32"), "wine_get_unix_file_name")));
  char* got = fn ? fn(p.c_str()) : nullptr;
  if (!got) return {};
  std::string out(got);
  ::HeapFree(::GetProcessHeap(), 0, got);
  return out;
}

// Starts the host's /bin/<tool> with `args` (Unix paths, ASCII, in double quotes) under Wine.
inline void run_host_tool(const std::wstring& tool, const std::string& args) {
  std::wstring cmd = L"Z:\\bin\\" + tool + L" " + std::wstring(args.begin(), args.end());
  const std::wstring exe = L"Z:\\bin\\" + tool;
  STARTUPINFOW si{};
  si.cb = sizeof si;
  PROCESS_INFORMATION pi{};
  if (!::CreateProcessW(exe.c_str(), cmd.data(), nullptr, nullptr, FALSE, 0, nullptr, nullptr, &si, &pi)) return;
  ::CloseHandle(pi.hThread);
  ::CloseHandle(pi.hProcess);
}

inline bool is_reparse_point(const std::filesystem::path& p) {
  const DWORD a = ::GetFileAttributesW(p.c_str());
  return a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_REPARSE_POINT);
}

template <class Pred>
bool within_seconds(int seconds, Pred done) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace detail

class DirLink {
 public:
  DirLink(const std::filesystem::path& target, const std::filesystem::path& link) : link_(link) {
    ::CreateSymbolicLinkW(link.c_str(), target.c_str(),
                          SYMBOLIC_LINK_FLAG_DIRECTORY | SYMBOLIC_LINK_FLAG_ALLOW_UNPRIVILEGED_CREATE);
    if (detail::is_reparse_point(link)) return;
    const std::string t = detail::unix_path_under_wine(target);
    unix_link_ = detail::unix_path_under_wine(link);
    if (!t.empty() && !unix_link_.empty()) detail::run_host_tool(L"ln", "-s \"" + t + "\" \"" + unix_link_ + "\"");
    if (!detail::within_seconds(10, [&] { return detail::is_reparse_point(link); }))
      throw std::runtime_error("cannot make a directory link at " + link.string());
  }
  ~DirLink() {
    if (unix_link_.empty()) {
      ::RemoveDirectoryW(link_.c_str());
      return;
    }
    detail::run_host_tool(L"rm", "\"" + unix_link_ + "\"");
    detail::within_seconds(10, [&] { return ::GetFileAttributesW(link_.c_str()) == INVALID_FILE_ATTRIBUTES; });
  }
  DirLink(const DirLink&) = delete;
  DirLink& operator=(const DirLink&) = delete;

 private:
  std::filesystem::path link_;
  std::string unix_link_;  // made by the host's ln (Wine): removed by its rm
};
#else
class DirLink {
 public:
  DirLink(const std::filesystem::path& target, const std::filesystem::path& link) : link_(link) {
    std::filesystem::create_directory_symlink(target, link);
  }
  ~DirLink() {
    std::error_code ec;
    std::filesystem::remove(link_, ec);
  }
  DirLink(const DirLink&) = delete;
  DirLink& operator=(const DirLink&) = delete;

 private:
  std::filesystem::path link_;
};
#endif

}  // namespace ferry::test
