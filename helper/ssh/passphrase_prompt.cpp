// Terminal passphrase prompt (see passphrase_prompt.hpp).
#include "helper/ssh/passphrase_prompt.hpp"

#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

namespace ferry::ssh {

PassphraseProvider terminal_passphrase_provider() {
  return [](const std::string& key_path) -> std::optional<std::string> {
    int fd = ::open("/dev/tty", O_RDWR | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string prompt = "Enter passphrase for key '" + key_path + "': ";
    (void)!::write(fd, prompt.data(), prompt.size());
    termios old {};
    bool restore = ::tcgetattr(fd, &old) == 0;
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
  };
}

}  // namespace ferry::ssh
