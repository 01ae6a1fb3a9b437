// Wakeup, wait_any and StopRequests on Windows (see wakeup.hpp): a manual-reset event,
// WaitForMultipleObjects, and a console control handler (it runs on a thread Windows starts for
// it) that only notes the kind and sets the event.
#include "common/wakeup.hpp"

#include <windows.h>

#include <cstring>
#include <vector>

namespace ferry::platform {
namespace {

std::atomic<Wakeup*> g_stop_wakeup{nullptr};
std::atomic<int> g_stop_kind{0};
std::atomic<bool> g_terminate_too{true};

BOOL WINAPI on_console_event(DWORD event) {
  switch (event) {
    case CTRL_C_EVENT:
      StopRequests::note(StopKind::interrupt);
      return TRUE;
    case CTRL_BREAK_EVENT:
    case CTRL_CLOSE_EVENT:
    case CTRL_LOGOFF_EVENT:
    case CTRL_SHUTDOWN_EVENT:
      if (!g_terminate_too) return FALSE;  // the next handler: by default, the end of the process
      StopRequests::note(StopKind::terminate);
      return TRUE;
    default:
      return FALSE;
  }
}

std::atomic<bool> g_interrupted{false};
std::atomic<const char*> g_interrupt_note{""};

BOOL WINAPI on_first_interrupt(DWORD event) {
  if (event != CTRL_C_EVENT) return FALSE;
  if (g_interrupted.exchange(true)) return FALSE;  // the second Ctrl-C: the default handler ends the process
  const char* note = g_interrupt_note.load();
  DWORD written = 0;
  ::WriteFile(::GetStdHandle(STD_ERROR_HANDLE), note, static_cast<DWORD>(std::strlen(note)), &written, nullptr);
  return TRUE;
}

}  // namespace

std::function<bool()> first_interrupt_flag(const char* note) {
  g_interrupted = false;
  g_interrupt_note = note;
  static const bool installed = ::SetConsoleCtrlHandler(on_first_interrupt, TRUE) != 0;
  (void)installed;
  return [] { return g_interrupted.load(); };
}

Wakeup::Wakeup() : waitable_(::CreateEventW(nullptr, TRUE, FALSE, nullptr)), raiser_(waitable_) {}

Wakeup::~Wakeup() {
  if (waitable_) ::CloseHandle(waitable_);
}

void Wakeup::raise() noexcept { ::SetEvent(raiser_); }

bool Wakeup::take() noexcept {
  const bool raised = ::WaitForSingleObject(waitable_, 0) == WAIT_OBJECT_0;
  ::ResetEvent(waitable_);
  return raised;
}

int wait_any(std::span<Wakeup* const> wakeups, std::optional<std::chrono::milliseconds> timeout) {
  std::vector<HANDLE> handles;
  for (const Wakeup* w : wakeups) handles.push_back(w->waitable());
  if (handles.empty() || handles.size() > MAXIMUM_WAIT_OBJECTS) return -1;
  const DWORD ms = timeout ? static_cast<DWORD>(std::min<long long>(std::max<long long>(timeout->count(), 0), INFINITE - 1)) : INFINITE;
  const DWORD got = ::WaitForMultipleObjects(static_cast<DWORD>(handles.size()), handles.data(), FALSE, ms);
  if (got >= WAIT_OBJECT_0 && got < WAIT_OBJECT_0 + handles.size()) return static_cast<int>(got - WAIT_OBJECT_0);
  return -1;
}

StopRequests::StopRequests(bool terminate_too) : terminate_too_(terminate_too) {
  g_terminate_too = terminate_too;
  g_stop_kind = 0;
  g_stop_wakeup = &wakeup_;
  ::SetConsoleCtrlHandler(on_console_event, TRUE);
}

StopRequests::~StopRequests() {
  ::SetConsoleCtrlHandler(on_console_event, FALSE);
  g_stop_wakeup = nullptr;
}

void StopRequests::note(StopKind kind) noexcept {
  int seen = g_stop_kind.load();
  while (seen < static_cast<int>(kind) && !g_stop_kind.compare_exchange_weak(seen, static_cast<int>(kind))) {
  }
  if (Wakeup* w = g_stop_wakeup.load()) w->raise();
}

StopKind StopRequests::take() noexcept {
  wakeup_.take();
  return static_cast<StopKind>(g_stop_kind.exchange(0));
}

}  // namespace ferry::platform
