// terminal.hpp on Windows: the console API. A secret is read from CONIN$ with echo off, in UTF-16
// (so any passphrase the keyboard can type arrives intact) and handed out as UTF-8.
#include "common/terminal.hpp"

#include <fcntl.h>
#include <io.h>
#include <windows.h>

#include <filesystem>

namespace ferry::platform {
namespace {

HANDLE handle_of(int fd) { return reinterpret_cast<HANDLE>(::_get_osfhandle(fd)); }

std::string utf8_of(const std::wstring& w) {
  const std::u8string u8 = std::filesystem::path(w).u8string();
  return std::string(u8.begin(), u8.end());
}

}  // namespace

void set_binary_mode(int fd) { ::_setmode(fd, _O_BINARY); }

bool is_terminal(int fd) {
  DWORD mode = 0;
  return ::GetConsoleMode(handle_of(fd), &mode) != 0;
}

std::optional<TerminalSize> terminal_size(int fd) {
  CONSOLE_SCREEN_BUFFER_INFO info{};
  if (!::GetConsoleScreenBufferInfo(handle_of(fd), &info)) return std::nullopt;
  return TerminalSize{info.srWindow.Right - info.srWindow.Left + 1, info.srWindow.Bottom - info.srWindow.Top + 1};
}

std::optional<std::string> read_secret(std::string_view prompt) {
  HANDLE in = ::CreateFileW(L"CONIN$", GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, nullptr,
                            OPEN_EXISTING, 0, nullptr);
  if (in == INVALID_HANDLE_VALUE) return std::nullopt;
  HANDLE out = ::CreateFileW(L"CONOUT$", GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, nullptr,
                             OPEN_EXISTING, 0, nullptr);
  const std::u8string p8(prompt.begin(), prompt.end());
  const std::wstring wide_prompt = std::filesystem::path(p8).wstring();
  DWORD n = 0;
  if (out != INVALID_HANDLE_VALUE) ::WriteConsoleW(out, wide_prompt.data(), static_cast<DWORD>(wide_prompt.size()), &n, nullptr);
  DWORD mode = 0;
  const bool restore = ::GetConsoleMode(in, &mode) != 0;
  if (restore) ::SetConsoleMode(in, (mode | ENABLE_LINE_INPUT) & ~static_cast<DWORD>(ENABLE_ECHO_INPUT));
  std::wstring line;
  bool got = false;
  wchar_t c;
  while (::ReadConsoleW(in, &c, 1, &n, nullptr) && n == 1) {
    got = true;
    if (c == L'\r' || c == L'\n') break;
    line += c;
  }
  if (restore) ::SetConsoleMode(in, mode);
  if (out != INVALID_HANDLE_VALUE) {
    ::WriteConsoleW(out, L"\r\n", 2, &n, nullptr);
    ::CloseHandle(out);
  }
  ::CloseHandle(in);
  if (!got) return std::nullopt;
  return utf8_of(line);
}

}  // namespace ferry::platform
