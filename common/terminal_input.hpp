// Standard input as something a wait can include (wait_any), for runs that forward it: a thread of
// its own reads it and raises wakeup(). A console or a pipe cannot go into a wait on Windows, so
// the thread is the one shape for both platforms. With `raw`, a terminal on stdin gives its keys
// as typed while this lives (Ctrl-C included, as a byte for the remote terminal) and size changes
// are reported. POSIX: poll(2) on stdin and a stop pipe, cfmakeraw, SIGWINCH. Windows:
// ReadConsoleInputW with virtual-terminal input (keys as VT sequences, resize events) for a
// console, ReadFile for a pipe or a file.
#pragma once

#include <memory>
#include <string>

#include "common/wakeup.hpp"

namespace ferry::platform {

class TerminalInput {
 public:
  explicit TerminalInput(bool raw);
  // Puts the terminal back as it was and stops the reader.
  ~TerminalInput();
  TerminalInput(const TerminalInput&) = delete;
  TerminalInput& operator=(const TerminalInput&) = delete;

  // Whether the terminal is in raw mode (stdin is a terminal and `raw` was asked).
  bool raw() const noexcept { return raw_; }
  // Raised when take() has something.
  Wakeup& wakeup() noexcept;

  struct Taken {
    std::string bytes;
    bool eof = false;      // stdin ended (or failed): nothing more comes
    bool resized = false;  // the terminal's size changed since the last take (raw only)
  };
  // What came since the last take, lowering wakeup(). The reader holds at most 1 MiB untaken:
  // it stops reading until the next take, so a large piped input never piles up in memory.
  Taken take();

  struct Impl;  // per platform: the reader thread, what raw mode replaced

 private:
  std::unique_ptr<Impl> impl_;
  bool raw_ = false;
};

}  // namespace ferry::platform
