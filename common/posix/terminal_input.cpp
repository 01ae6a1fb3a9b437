// TerminalInput on POSIX (see terminal_input.hpp): the reader polls stdin, the stop wakeup and a
// SIGWINCH pipe; raw mode is cfmakeraw on stdin, put back by the destructor.
#include "common/terminal_input.hpp"

#include <poll.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "common/terminal_input_state.hpp"

namespace ferry::platform {
namespace {

// The SIGWINCH handler's only work: raising this (one raw TerminalInput at a time).
std::atomic<Wakeup*> g_resize{nullptr};

extern "C" void on_resize(int) {
  const int saved = errno;
  if (Wakeup* w = g_resize.load()) w->raise();
  errno = saved;
}

void read_until_stopped(detail::InputQueue& q, Wakeup& resize) {
  bool open = true;
  char buf[65536];
  while (q.wait_for_room()) {
    pollfd fds[3] = {{q.stopped.waitable(), POLLIN, 0}, {resize.waitable(), POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
    const int n = ::poll(fds, open ? 3 : 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || fds[0].revents) return;
    if (fds[1].revents && resize.take()) q.note_resize();
    if (!open || !fds[2].revents) continue;
    const ssize_t got = ::read(STDIN_FILENO, buf, sizeof buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got > 0) {
      q.add(buf, static_cast<std::size_t>(got));
    } else {
      open = false;
      q.end();
    }
  }
}

}  // namespace

struct TerminalInput::Impl {
  std::shared_ptr<detail::InputQueue> queue = std::make_shared<detail::InputQueue>();
  Wakeup resize;
  termios saved{};
  struct sigaction old_winch {};
  std::thread reader;
};

TerminalInput::TerminalInput(bool raw) : impl_(std::make_unique<Impl>()) {
  Impl& i = *impl_;
  if (raw && ::isatty(STDIN_FILENO) && ::tcgetattr(STDIN_FILENO, &i.saved) == 0) {
    termios made = i.saved;
    ::cfmakeraw(&made);
    raw_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &made) == 0;
  }
  if (raw_) {
    g_resize = &i.resize;
    struct sigaction sa {};
    sa.sa_handler = on_resize;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGWINCH, &sa, &i.old_winch);
  }
  i.reader = std::thread([q = i.queue, &resize = i.resize] { read_until_stopped(*q, resize); });
}

TerminalInput::~TerminalInput() {
  Impl& i = *impl_;
  i.queue->ask_stop();
  if (i.reader.joinable()) i.reader.join();
  if (raw_) {
    ::sigaction(SIGWINCH, &i.old_winch, nullptr);
    g_resize = nullptr;
    ::tcsetattr(STDIN_FILENO, TCSANOW, &i.saved);
  }
}

Wakeup& TerminalInput::wakeup() noexcept { return impl_->queue->wakeup; }

TerminalInput::Taken TerminalInput::take() { return impl_->queue->take(); }

}  // namespace ferry::platform
