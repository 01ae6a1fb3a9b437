// The wall-clock bound an integration test holds a timed behaviour of the code under test to (a
// keepalive verdict, a reconnect's backoff, an operation's deadline): derived from the times the
// test configures, never a hand-picked number of seconds.
//
// The margin: twice the designed time, plus 3 s. The tests run under `ctest -j$(nproc)`, on CI a
// 2-core machine, beside sshd fixtures, compiles of the e2e tests' extension and torch training;
// the behaviour's path is a chain of timers and thread hand-offs (a 250 ms keepalive tick, the
// reconnect thread, the state callback, this test's waiting thread), each of which waits for a
// core behind up to two busy neighbours. The proportional part covers timers that fire late in
// proportion to how many ticks they take; the flat 3 s covers one-off stalls of a whole process
// (a neighbour's fork and exec burst, a cold binary's page faults). The 1-1.5 s of slack these
// tests had before was the suite's likeliest flake under -j. Still tight enough to catch what a
// broken design does: no keepalive verdict never fires, a deadline that is not honoured waits out
// the whole command (20 s), a backoff that is not bounded by the outage takes far longer.
#pragma once

#include <chrono>

namespace ferry::test {

inline constexpr std::chrono::milliseconds kLoadedMachineFlatMargin{3000};

template <class Rep, class Period>
constexpr std::chrono::milliseconds loaded_bound(std::chrono::duration<Rep, Period> designed) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(designed) * 2 + kLoadedMachineFlatMargin;
}

}  // namespace ferry::test
