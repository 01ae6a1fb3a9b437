// Waiting on several things at once, the same way on every platform: a Wakeup is a flag one side
// raises (any thread; on POSIX also a signal handler) and the other waits on with others
// (wait_any); StopRequests turns the terminal's requests to stop into one. POSIX: a non-blocking
// self-pipe, poll(2), sigaction for SIGINT/SIGTERM/SIGHUP. Windows: a manual-reset event,
// WaitForMultipleObjects, SetConsoleCtrlHandler (Ctrl-C; Ctrl-Break, a closed console, logoff and
// shutdown). What the CLI's and the server's waits on runs and on Ctrl-C are built on.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <span>

namespace ferry::platform {

#ifdef _WIN32
using NativeWaitable = void*;  // an event HANDLE
#else
using NativeWaitable = int;    // the read end of a self-pipe
#endif

class Wakeup {
 public:
  Wakeup();
  ~Wakeup();
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;

  // Raises it (async-signal-safe on POSIX: one write(2)); raising a raised one changes nothing.
  void raise() noexcept;
  // Lowers it: whether it was raised.
  bool take() noexcept;
  // What wait_any (or a caller's own poll) waits on.
  NativeWaitable waitable() const noexcept { return waitable_; }

 private:
  NativeWaitable waitable_;
  NativeWaitable raiser_;  // POSIX: the pipe's write end; Windows: the same event
};

// Waits until one of `wakeups` is raised (it stays raised: take() lowers it): the index of the
// first raised one, or -1 once `timeout` passed (none: no limit).
int wait_any(std::span<Wakeup* const> wakeups, std::optional<std::chrono::milliseconds> timeout = std::nullopt);

enum class StopKind { none, interrupt, terminate };

// While it lives, the terminal's requests to stop raise wakeup() instead of ending the process:
// interrupt (Ctrl-C, SIGINT) or terminate (SIGTERM, SIGHUP; Ctrl-Break, the console closed, logoff,
// shutdown). One at a time in a process; the destructor puts back what was there. Without
// `terminate_too` only interrupts are caught (the others keep their default: the process ends).
class StopRequests {
 public:
  explicit StopRequests(bool terminate_too = true);
  ~StopRequests();
  StopRequests(const StopRequests&) = delete;
  StopRequests& operator=(const StopRequests&) = delete;

  Wakeup& wakeup() noexcept { return wakeup_; }
  // What came since the last take (terminate over interrupt), lowering the wakeup.
  StopKind take() noexcept;

  // What the handlers call (the Windows console handler runs on a thread of its own).
  static void note(StopKind kind) noexcept;

 private:
  Wakeup wakeup_;
  bool terminate_too_;
};

// For work that looks at a flag between steps (sync, pull): from now on the first Ctrl-C sets the
// flag the returned function reads and writes `note` (a string literal) to stderr; a second one
// ends the process as Ctrl-C does by default. Calling it again clears the flag.
std::function<bool()> first_interrupt_flag(const char* note);

}  // namespace ferry::platform
