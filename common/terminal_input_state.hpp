// What TerminalInput's reader thread and its owner share, the same on every platform: the bytes
// read and not yet taken, end of input, a size change, and the stop request. Internal to the
// terminal_input.cpp of each platform folder; shared-owned, so a reader that cannot be stopped
// (a Windows pipe read that will not cancel) can be let go without reaching freed memory.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>

#include "common/terminal_input.hpp"

namespace ferry::platform::detail {

struct InputQueue {
  static constexpr std::size_t kMaxHeld = 1 << 20;

  Wakeup wakeup;
  Wakeup stopped;                // raised by ask_stop, for a reader waiting on it with its input
  std::mutex mutex;
  std::condition_variable room;  // take() made room, or stop was asked
  std::string held;
  bool eof = false;
  bool resized = false;
  bool stop = false;

  // The reader's side: false once it is to stop. Waits while kMaxHeld is held.
  bool wait_for_room() {
    std::unique_lock lock(mutex);
    room.wait(lock, [&] { return stop || held.size() < kMaxHeld; });
    return !stop;
  }
  void add(const char* data, std::size_t n) {
    {
      std::lock_guard lock(mutex);
      held.append(data, n);
    }
    wakeup.raise();
  }
  void end() {
    {
      std::lock_guard lock(mutex);
      eof = true;
    }
    wakeup.raise();
  }
  void note_resize() {
    {
      std::lock_guard lock(mutex);
      resized = true;
    }
    wakeup.raise();
  }
  bool stopping() {
    std::lock_guard lock(mutex);
    return stop;
  }
  void ask_stop() {
    {
      std::lock_guard lock(mutex);
      stop = true;
    }
    stopped.raise();
    room.notify_all();
  }
  TerminalInput::Taken take() {
    wakeup.take();
    TerminalInput::Taken t;
    {
      std::lock_guard lock(mutex);
      t.bytes.swap(held);
      t.eof = eof;
      t.resized = resized;
      resized = false;
    }
    room.notify_all();
    return t;
  }
};

}  // namespace ferry::platform::detail
