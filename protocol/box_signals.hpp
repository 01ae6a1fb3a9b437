// Signal numbers as the box (Linux, x86-64 and aarch64 alike) numbers them: what the agent
// reports in run/exited and takes in run/signal. Not the laptop's <csignal>, whose numbers differ
// on macOS and whose names Windows mostly lacks.
#pragma once

namespace ferry::protocol::box_signal {

inline constexpr int kHup = 1;
inline constexpr int kInt = 2;
inline constexpr int kQuit = 3;
inline constexpr int kKill = 9;
inline constexpr int kUsr1 = 10;
inline constexpr int kUsr2 = 12;
inline constexpr int kTerm = 15;
inline constexpr int kCont = 18;
inline constexpr int kStop = 19;
inline constexpr int kTstp = 20;
inline constexpr int kWinch = 28;

}  // namespace ferry::protocol::box_signal
