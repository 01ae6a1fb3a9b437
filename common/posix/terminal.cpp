// terminal.hpp on POSIX: isatty, TIOCGWINSZ and /dev/tty under termios.
#include "common/terminal.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

namespace ferry::platform {

bool is_terminal(int fd) { return ::isatty(fd) == 1; }

void set_binary_mode(int) {}

std::optional<TerminalSize> terminal_size(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0) return std::nullopt;
  return TerminalSize{ws.ws_col, ws.ws_row};
}

std::optional<std::string> read_secret(std::string_view prompt) {
  const int fd = ::open("/dev/tty", O_RDWR | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  (void)!::write(fd, prompt.data(), prompt.size());
  termios old{};
  const bool restore = ::tcgetattr(fd, &old) == 0;
  if (restore) {
    termios quiet = old;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    ::tcsetattr(fd, TCSAFLUSH, &quiet);
  }
  std::string line;
  char c;
  bool got = false;
  while (::read(fd, &c, 1) == 1) {
    got = true;
    if (c == '\n' || c == '\r') break;
    line += c;
  }
  if (restore) ::tcsetattr(fd, TCSAFLUSH, &old);
  (void)!::write(fd, "\n", 1);
  ::close(fd);
  if (!got) return std::nullopt;
  return line;
}

}  // namespace ferry::platform
