// The terminal ferry talks to, where the CLI needs more than a stream: whether a standard stream
// is a terminal, its size, and a secret read without echo. POSIX: isatty, TIOCGWINSZ, /dev/tty
// with termios; Windows: the console API (CONIN$/CONOUT$). Implementations in common/posix/ and
// common/windows/.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ferry::platform {

// fd: 0, 1 or 2.
bool is_terminal(int fd);

// `fd` carries bytes as they are: nothing to do on POSIX; on Windows the C runtime's text mode
// would turn "\r\n" into "\n" on reads and "\n" into "\r\n" on writes, which breaks LSP framing.
void set_binary_mode(int fd);

struct TerminalSize {
  int columns = 0;
  int rows = 0;
};
// The size of the terminal behind `fd`, nothing when it is none.
std::optional<TerminalSize> terminal_size(int fd);

// Shows `prompt` on the controlling terminal and reads one line there with echo off (not stdin,
// which may be a pipe). Nothing when there is no terminal or it closed before a line came.
std::optional<std::string> read_secret(std::string_view prompt);

}  // namespace ferry::platform
