// Wakeup, wait_any and StopRequests on POSIX (see wakeup.hpp): a non-blocking self-pipe, poll(2),
// and sigaction handlers that only write to the pipe.
#include "common/wakeup.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace ferry::platform {
namespace {

// The one StopRequests alive: what its handlers write to, and the kind they saw.
std::atomic<Wakeup*> g_stop_wakeup{nullptr};
std::atomic<int> g_stop_kind{0};
struct sigaction g_saved[3];
constexpr int kStopSignals[3] = {SIGINT, SIGTERM, SIGHUP};

void on_stop_signal(int sig) {
  const int saved = errno;
  StopRequests::note(sig == SIGINT ? StopKind::interrupt : StopKind::terminate);
  errno = saved;
}

std::atomic<bool> g_interrupted{false};
const char* g_interrupt_note = "";

// What the SIGINT handler may touch: a lock-free flag, write(2), signal(2), raise(3).
extern "C" void on_first_interrupt(int) {
  if (g_interrupted.exchange(true)) {  // the second Ctrl-C: quit now
    ::signal(SIGINT, SIG_DFL);
    ::raise(SIGINT);
    return;
  }
  const int saved = errno;
  [[maybe_unused]] auto n = ::write(STDERR_FILENO, g_interrupt_note, std::strlen(g_interrupt_note));
  errno = saved;
}

}  // namespace

std::function<bool()> first_interrupt_flag(const char* note) {
  g_interrupted = false;
  g_interrupt_note = note;
  struct sigaction sa {};
  sa.sa_handler = on_first_interrupt;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  return [] { return g_interrupted.load(); };
}

Wakeup::Wakeup() : waitable_(-1), raiser_(-1) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0) {
    waitable_ = p[0];
    raiser_ = p[1];
  }
}

Wakeup::~Wakeup() {
  if (waitable_ >= 0) ::close(waitable_);
  if (raiser_ >= 0) ::close(raiser_);
}

void Wakeup::raise() noexcept {
  const char c = 1;
  [[maybe_unused]] auto n = ::write(raiser_, &c, 1);  // a full pipe is raised already
}

bool Wakeup::take() noexcept {
  bool raised = false;
  char buf[64];
  while (::read(waitable_, buf, sizeof buf) > 0) raised = true;
  return raised;
}

int wait_any(std::span<Wakeup* const> wakeups, std::optional<std::chrono::milliseconds> timeout) {
  std::vector<pollfd> fds;
  for (const Wakeup* w : wakeups) fds.push_back({w->waitable(), POLLIN, 0});
  const auto deadline = std::chrono::steady_clock::now() + timeout.value_or(std::chrono::milliseconds(0));
  for (;;) {
    int ms = -1;
    if (timeout) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      ms = static_cast<int>(std::max<long long>(0, std::min<long long>(left, 1 << 30)));
    }
    const int n = ::poll(fds.data(), fds.size(), ms);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    for (std::size_t i = 0; i < fds.size(); ++i)
      if (fds[i].revents) return static_cast<int>(i);
  }
}

StopRequests::StopRequests(bool terminate_too) : terminate_too_(terminate_too) {
  g_stop_kind = 0;
  g_stop_wakeup = &wakeup_;
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int i = 0; i < (terminate_too_ ? 3 : 1); ++i) ::sigaction(kStopSignals[i], &sa, &g_saved[i]);
}

StopRequests::~StopRequests() {
  for (int i = 0; i < (terminate_too_ ? 3 : 1); ++i) ::sigaction(kStopSignals[i], &g_saved[i], nullptr);
  g_stop_wakeup = nullptr;
}

void StopRequests::note(StopKind kind) noexcept {
  // terminate stays once seen: an interrupt after it does not soften it.
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
