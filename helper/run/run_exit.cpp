// Exit statuses and signal names for runs.
#include "helper/run/run_exit.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <utility>

#include "protocol/box_signals.hpp"

namespace ferry::run {

namespace {

namespace sig = protocol::box_signal;
// The box's numbers: a run's signals are Linux's whatever the laptop is.
constexpr std::array<std::pair<std::string_view, int>, 11> kSignals{{
    {"HUP", sig::kHup}, {"INT", sig::kInt}, {"QUIT", sig::kQuit}, {"KILL", sig::kKill}, {"USR1", sig::kUsr1},
    {"USR2", sig::kUsr2}, {"TERM", sig::kTerm}, {"CONT", sig::kCont}, {"STOP", sig::kStop}, {"TSTP", sig::kTstp},
    {"WINCH", sig::kWinch}}};

}  // namespace

std::expected<RunExit, std::string> parse_run_exit(const json& params) {
  if (!params.is_object()) return std::unexpected("run/exited: expected an object");
  RunExit e;
  auto id = params.find("id");
  if (id == params.end() || !id->is_string()) return std::unexpected("run/exited: missing id");
  e.id = id->get<std::string>();
  if (auto c = params.find("exitCode"); c != params.end() && c->is_number_integer()) e.exit_code = c->get<int>();
  if (auto s = params.find("signal"); s != params.end() && s->is_number_integer()) e.signal = s->get<int>();
  if (auto l = params.find("lost"); l != params.end() && l->is_boolean()) e.lost = l->get<bool>();
  if (auto t = params.find("endedAt"); t != params.end() && t->is_string()) e.ended_at = t->get<std::string>();
  if (auto b = params.find("logBytes"); b != params.end() && b->is_number_unsigned()) e.log_bytes = b->get<std::uint64_t>();
  else if (b != params.end() && b->is_number_integer() && b->get<long long>() >= 0) e.log_bytes = b->get<std::uint64_t>();
  return e;
}

int exit_status(const RunExit& exit) {
  if (exit.exit_code) return *exit.exit_code & 0xff;
  if (exit.signal && *exit.signal > 0 && *exit.signal < 128) return 128 + *exit.signal;
  return kFerryFailure;
}

std::expected<int, std::string> signal_number(std::string_view name) {
  std::string upper;
  for (char c : name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string_view s = upper;
  if (s.starts_with("SIG")) s.remove_prefix(3);
  if (!s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    int n = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec == std::errc() && p == s.data() + s.size() && n > 0 && n < 65) return n;
    return std::unexpected("signal number \"" + std::string(name) + "\" is out of range");
  }
  for (const auto& [n, v] : kSignals)
    if (n == s) return v;
  return std::unexpected("unknown signal \"" + std::string(name) +
                         "\" (INT, TERM, KILL, HUP, QUIT, USR1, USR2, CONT, STOP, TSTP, WINCH or a number)");
}

std::string signal_name(int number) {
  for (const auto& [n, v] : kSignals)
    if (v == number) return std::string(n);
  return std::to_string(number);
}

std::string describe(const RunExit& exit) {
  if (exit.exit_code) return "exit " + std::to_string(*exit.exit_code);
  if (exit.signal) return "signal " + signal_name(*exit.signal) + " (" + std::to_string(*exit.signal) + ")";
  if (exit.lost) return "lost (its supervisor is gone: the box rebooted or it was killed; no exit status)";
  return "no exit status";
}

}  // namespace ferry::run
