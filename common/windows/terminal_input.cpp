// TerminalInput on Windows (see terminal_input.hpp). A console is read with ReadConsoleInputW
// after a wait on it and the stop event (keys as typed in virtual-terminal input mode, UTF-16 made
// UTF-8, buffer-size events as resizes); a pipe or a file with ReadFile on a thread of its own,
// which CancelSynchronousIo stops (a pipe read does not wake for anything else).
#include "common/terminal_input.hpp"

#include <windows.h>

#include <string>

#include "common/terminal_input_state.hpp"

namespace ferry::platform {
namespace {

std::string utf8_of(std::wstring_view w) {
  if (w.empty()) return {};
  const int n = ::WideCharToMultiByte(CP_UTF8, 0, w.data(), static_cast<int>(w.size()), nullptr, 0, nullptr, nullptr);
  std::string out(static_cast<std::size_t>(n), '\0');
  ::WideCharToMultiByte(CP_UTF8, 0, w.data(), static_cast<int>(w.size()), out.data(), n, nullptr, nullptr);
  return out;
}

// The typed text in `records`; a high surrogate at the end waits in `text` for its pair.
void keys_of(const INPUT_RECORD* records, DWORD n, std::wstring& text, bool& resized) {
  for (DWORD k = 0; k < n; ++k) {
    const INPUT_RECORD& r = records[k];
    if (r.EventType == WINDOW_BUFFER_SIZE_EVENT) resized = true;
    if (r.EventType != KEY_EVENT || !r.Event.KeyEvent.bKeyDown || r.Event.KeyEvent.uChar.UnicodeChar == 0) continue;
    text.append(std::max<WORD>(r.Event.KeyEvent.wRepeatCount, 1), r.Event.KeyEvent.uChar.UnicodeChar);
  }
}

void read_console(detail::InputQueue& q, HANDLE in) {
  std::wstring text;
  INPUT_RECORD records[128];
  while (q.wait_for_room()) {
    HANDLE waits[2] = {q.stopped.waitable(), in};
    if (::WaitForMultipleObjects(2, waits, FALSE, INFINITE) != WAIT_OBJECT_0 + 1) return;
    DWORD n = 0;
    if (!::ReadConsoleInputW(in, records, 128, &n)) return q.end();
    bool resized = false;
    keys_of(records, n, text, resized);
    if (resized) q.note_resize();
    std::size_t whole = text.size();
    if (whole > 0 && IS_HIGH_SURROGATE(text.back())) --whole;
    if (whole == 0) continue;
    const std::string bytes = utf8_of(std::wstring_view(text).substr(0, whole));
    q.add(bytes.data(), bytes.size());
    text.erase(0, whole);
  }
}

void read_stream(detail::InputQueue& q, HANDLE in) {
  char buf[65536];
  while (q.wait_for_room()) {
    DWORD got = 0;
    const BOOL ok = ::ReadFile(in, buf, sizeof buf, &got, nullptr);
    if (ok && got > 0) {
      q.add(buf, got);
      continue;
    }
    if (ok || ::GetLastError() != ERROR_OPERATION_ABORTED || !q.stopping()) q.end();  // end, broken pipe, failure
    return;
  }
}

struct ReaderStart {
  std::shared_ptr<detail::InputQueue> queue;
  HANDLE in;
  bool console;
};

DWORD WINAPI reader_main(void* arg) {
  std::unique_ptr<ReaderStart> start(static_cast<ReaderStart*>(arg));
  if (start->console)
    read_console(*start->queue, start->in);
  else
    read_stream(*start->queue, start->in);
  return 0;
}

constexpr DWORD kRawInputOff = ENABLE_LINE_INPUT | ENABLE_ECHO_INPUT | ENABLE_PROCESSED_INPUT;

}  // namespace

struct TerminalInput::Impl {
  std::shared_ptr<detail::InputQueue> queue = std::make_shared<detail::InputQueue>();
  HANDLE in = ::GetStdHandle(STD_INPUT_HANDLE);
  HANDLE out = ::GetStdHandle(STD_OUTPUT_HANDLE);
  DWORD saved_in = 0, saved_out = 0;
  bool out_changed = false;
  HANDLE reader = nullptr;
};

TerminalInput::TerminalInput(bool raw) : impl_(std::make_unique<Impl>()) {
  Impl& i = *impl_;
  const bool console = ::GetConsoleMode(i.in, &i.saved_in) != 0;
  if (raw && console) {
    const DWORD made = (i.saved_in | ENABLE_WINDOW_INPUT) & ~kRawInputOff;
    // Virtual-terminal input gives arrows and function keys as the remote terminal expects them;
    // a console without it still gives the typed characters.
    raw_ = ::SetConsoleMode(i.in, made | ENABLE_VIRTUAL_TERMINAL_INPUT) || ::SetConsoleMode(i.in, made);
    if (raw_ && ::GetConsoleMode(i.out, &i.saved_out))
      i.out_changed = ::SetConsoleMode(i.out, i.saved_out | ENABLE_PROCESSED_OUTPUT | ENABLE_VIRTUAL_TERMINAL_PROCESSING);
  }
  auto* start = new ReaderStart{i.queue, i.in, console && raw_};
  i.reader = ::CreateThread(nullptr, 0, reader_main, start, 0, nullptr);
  if (!i.reader) {
    delete start;
    i.queue->end();
  }
}

TerminalInput::~TerminalInput() {
  Impl& i = *impl_;
  i.queue->ask_stop();
  // A pipe read wakes only when cancelled; one cancel may come before the read starts, so it is
  // repeated. A reader that still does not stop is let go: it holds its own share of the queue.
  for (int tries = 0; i.reader && tries < 20; ++tries) {
    ::CancelSynchronousIo(i.reader);
    if (::WaitForSingleObject(i.reader, 50) == WAIT_OBJECT_0) break;
  }
  if (i.reader) ::CloseHandle(i.reader);
  if (raw_) ::SetConsoleMode(i.in, i.saved_in);
  if (i.out_changed) ::SetConsoleMode(i.out, i.saved_out);
}

Wakeup& TerminalInput::wakeup() noexcept { return impl_->queue->wakeup; }

TerminalInput::Taken TerminalInput::take() { return impl_->queue->take(); }

}  // namespace ferry::platform
