// ferry.json's autostop block as the agent's autostop/set params (remote-runtime/agent/autostop/),
// shared by ferry serve (which arms it on connect) and `ferry autostop`.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "helper/deploy/project_config.hpp"

namespace ferry::deploy {

inline nlohmann::json autostop_set_params(const AutostopConfig& a, double idle_seconds) {
  nlohmann::json j{{"idleSeconds", idle_seconds}, {"action", a.action}, {"gpuUtilBelow", a.gpu_util_below}};
  if (!a.command.empty()) j["command"] = a.command;
  if (!a.pre_stop.empty()) j["preStop"] = a.pre_stop;
  return j;
}
inline nlohmann::json autostop_set_params(const AutostopConfig& a) { return autostop_set_params(a, a.idle_minutes * 60.0); }

// Why this autostop must not be armed on `host`, or nullopt. The `local` host is the person's own
// machine: "stop" would shut the laptop down, so it is never armed there, whoever asks. A Slurm
// cluster's login node (`slurm`) is shared and its jobs end at their time limits: never there.
inline std::optional<std::string> autostop_refusal(const std::string& host, const AutostopConfig& a, bool slurm = false) {
  if (slurm)
    return std::string("the host is a Slurm cluster's login node (ferry.json's slurm block): it is shared, and Slurm ends "
                       "jobs and allocations at their time limits; ferry never arms autostop there");
  if (host == "local" && a.action == "stop")
    return std::string("autostop's action \"stop\" shuts the host down, and the \"local\" host is this machine: "
                       "ferry never arms it here (use \"notify\" or \"command\", or a real host)");
  return std::nullopt;
}

}  // namespace ferry::deploy
