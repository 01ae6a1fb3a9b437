// The attach scenario every debugger test runs against samples/debug/loop.py: attach, break on
// the marked line, read locals, continue once, clear breakpoints, run to the end. Header-only;
// needs tests/support/dap_client.cpp linked in.
#pragma once

#include <chrono>
#include <expected>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/dap_client.hpp"

namespace ferry::test {

struct PathMapping {
  std::string local_root;
  std::string remote_root;
};

// What the scenario saw, for the test to check.
struct BreakpointObservation {
  int stopped_line = 0;          // first stop
  std::string stopped_reason;
  std::string stopped_path;      // the frame's source path, as the adapter mapped it
  std::string first_i, first_total, first_n;       // locals at the first stop
  std::string second_i, second_total;               // after one continue
  std::optional<int> exit_code;  // from the adapter's exited event, when it sent one
  bool terminated = false;       // the adapter said the debug session ended
};

// The 1-based line holding `marker` in `file`, or 0.
inline int line_of(const std::filesystem::path& file, const std::string& marker) {
  std::ifstream in(file);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(marker) != std::string::npos) return n;
  return 0;
}

// `source` is the script as this client names it (the local path); with `mappings` the attach
// request carries pathMappings, as VS Code sends them from ferry's configuration.
// As run_breakpoint_scenario below, attaching with `attach` as its arguments: what an editor sends
// for a launch.json entry (ferry's printed configuration, for one).
inline std::expected<BreakpointObservation, std::string> run_breakpoint_scenario_with(
    int port, const std::filesystem::path& source, int line, const json& attach,
    std::chrono::milliseconds connect_timeout = std::chrono::seconds(20)) {
  using namespace std::chrono_literals;
  BreakpointObservation seen;
  auto client = DapClient::connect_and_initialize(port, connect_timeout);
  if (!client) return std::unexpected(client.error());
  auto fail = [&](const std::string& what) -> std::unexpected<std::string> {
    return std::unexpected(what + "\n--- DAP transcript ---\n" + client->transcript());
  };
  // debugpy answers attach only after configurationDone; it says "initialized" first.
  const int attach_seq = client->send_request("attach", attach);
  if (auto e = client->wait_event("initialized", 15s); !e) return fail(e.error());
  auto set = client->request("setBreakpoints", {{"source", {{"path", source.string()}}},
                                                {"breakpoints", json::array({{{"line", line}}})}});
  if (!set) return fail(set.error());
  if (!set->contains("breakpoints") || (*set)["breakpoints"].empty()) return fail("setBreakpoints: no breakpoints in " + set->dump());
  if (auto done = client->request("configurationDone"); !done) return fail(done.error());
  if (auto attached = client->wait_response(attach_seq, 15s); !attached) return fail(attached.error());

  // At a stop: the top frame's line and path, and its locals by name.
  struct Stop {
    int thread = 0;
    int line = 0;
    std::string path;
    std::map<std::string, std::string> locals;
  };
  auto next_stop = [&]() -> std::expected<Stop, std::string> {
    auto stopped = client->wait_event("stopped", 20s);
    if (!stopped) return std::unexpected(stopped.error());
    if (seen.stopped_reason.empty()) seen.stopped_reason = stopped->value("reason", "");
    Stop stop;
    stop.thread = stopped->value("threadId", 0);
    auto trace = client->request("stackTrace", {{"threadId", stop.thread}, {"startFrame", 0}, {"levels", 1}});
    if (!trace) return std::unexpected(trace.error());
    if ((*trace)["stackFrames"].empty()) return std::unexpected("stackTrace: no frames");
    const auto& frame = (*trace)["stackFrames"][0];
    stop.line = frame.value("line", 0);
    if (frame.contains("source")) stop.path = frame["source"].value("path", "");
    auto scopes = client->request("scopes", {{"frameId", frame.value("id", 0)}});
    if (!scopes) return std::unexpected(scopes.error());
    for (const auto& scope : (*scopes)["scopes"]) {
      if (scope.value("name", "") != "Locals") continue;
      auto vars = client->request("variables", {{"variablesReference", scope.value("variablesReference", 0)}});
      if (!vars) return std::unexpected(vars.error());
      for (const auto& v : (*vars)["variables"]) stop.locals[v.value("name", "")] = v.value("value", "");
    }
    return stop;
  };

  auto first = next_stop();
  if (!first) return fail(first.error());
  seen.stopped_line = first->line;
  seen.stopped_path = first->path;
  seen.first_i = first->locals["i"];
  seen.first_total = first->locals["total"];
  seen.first_n = first->locals["n"];
  if (auto go = client->request("continue", {{"threadId", first->thread}}); !go) return fail(go.error());

  auto second = next_stop();
  if (!second) return fail(second.error());
  seen.second_i = second->locals["i"];
  seen.second_total = second->locals["total"];
  // Clear the breakpoint before continuing, so the loop runs to the end.
  auto cleared = client->request("setBreakpoints", {{"source", {{"path", source.string()}}}, {"breakpoints", json::array()}});
  if (!cleared) return fail(cleared.error());
  if (auto go = client->request("continue", {{"threadId", second->thread}}); !go) return fail(go.error());

  // In an attach, debugpy 1.6 ends with "terminated" and no "exited" (it does not own the
  // process); a newer one may send both, in that order.
  seen.terminated = client->wait_event("terminated", 20s).has_value();
  if (auto exited = client->wait_event("exited", 0ms); exited && exited->contains("exitCode"))
    seen.exit_code = (*exited)["exitCode"].get<int>();
  return seen;
}

inline std::expected<BreakpointObservation, std::string> run_breakpoint_scenario(
    int port, const std::filesystem::path& source, int line, const std::vector<PathMapping>& mappings = {},
    std::chrono::milliseconds connect_timeout = std::chrono::seconds(20)) {
  json attach = {{"name", "ferry test attach"}, {"type", "debugpy"}, {"request", "attach"}, {"justMyCode", true}};
  if (!mappings.empty()) {
    attach["pathMappings"] = json::array();
    for (const auto& m : mappings) attach["pathMappings"].push_back({{"localRoot", m.local_root}, {"remoteRoot", m.remote_root}});
  }
  return run_breakpoint_scenario_with(port, source, line, attach, connect_timeout);
}

}  // namespace ferry::test
