// Typed gpu/* messages: see messages_gpu.hpp.
#include "protocol/messages_gpu.hpp"

namespace ferry::protocol {

std::optional<DecodeError> from_json(const json& j, GpuWatchParams& out, const std::string&) {
  if (j.is_null()) return std::nullopt;
  if (!j.is_object()) return DecodeError{"", "expected {intervalMs?}"};
  if (auto it = j.find("intervalMs"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int>() < 200 || it->get<int>() > 3600000)
      return DecodeError{"/intervalMs", "expected milliseconds between samples, from 200 to 3600000"};
    out.interval_ms = it->get<int>();
  }
  return std::nullopt;
}

json to_json(const GpuStatusResult& r) {
  json j = r.agent.is_object() ? r.agent : json::object();
  if (r.usd_per_hour) j["usdPerHour"] = *r.usd_per_hour;
  if (r.runs) {
    json runs = json::array();
    for (const auto& run : *r.runs) runs.push_back({{"id", run.id}, {"costUsd", run.cost_usd}});
    j["runs"] = std::move(runs);
  }
  if (r.slurm) {
    json slurm = json::object();
    if (r.slurm->allocation) {
      json a = to_json(SlurmJobsResult{{*r.slurm->allocation}})["jobs"][0];
      if (r.slurm->seconds_left) a["secondsLeft"] = *r.slurm->seconds_left;
      slurm["allocation"] = std::move(a);
    }
    j["slurm"] = std::move(slurm);
  }
  return j;
}

// The money keys are split off; the rest is the agent's.
std::optional<DecodeError> from_json(const json& j, GpuStatusResult& out, const std::string&) {
  if (!j.is_object()) return DecodeError{"", "expected the agent's gpu/status object"};
  out = {};
  out.agent = j;
  if (auto it = j.find("usdPerHour"); it != j.end()) {
    if (!it->is_number()) return DecodeError{"/usdPerHour", "expected a price (USD per hour)"};
    out.usd_per_hour = it->get<double>();
    out.agent.erase("usdPerHour");
  }
  if (auto it = j.find("runs"); it != j.end()) {
    if (!it->is_array()) return DecodeError{"/runs", "expected an array of {id, costUsd}"};
    out.runs.emplace();
    for (std::size_t i = 0; i < it->size(); ++i) {
      const json& r = (*it)[i];
      if (!r.is_object() || !r.contains("id") || !r["id"].is_string() || !r.contains("costUsd") || !r["costUsd"].is_number())
        return DecodeError{"/runs/" + std::to_string(i), "expected {id, costUsd}"};
      out.runs->push_back({r["id"].get<std::string>(), r["costUsd"].get<double>()});
    }
    out.agent.erase("runs");
  }
  if (auto it = j.find("slurm"); it != j.end()) {
    if (!it->is_object()) return DecodeError{"/slurm", "expected {allocation?}"};
    auto& slurm = out.slurm.emplace();
    if (auto a = it->find("allocation"); a != it->end()) {
      SlurmJobsResult one;
      if (auto e = from_json(json{{"jobs", {*a}}}, one)) return DecodeError{"/slurm/allocation", e->message};
      slurm.allocation = one.jobs[0];
      if (auto left = a->find("secondsLeft"); left != a->end() && left->is_number_integer()) slurm.seconds_left = left->get<long>();
    }
    out.agent.erase("slurm");
  }
  return std::nullopt;
}

json to_json(const GpuSampleParams& p) {
  if (p.status) return to_json(*p.status);
  return {{"error", p.error}};
}

json to_json(const GpuWatchResult& r) { return {{"watching", r.watching}, {"intervalMs", r.interval_ms}}; }

json to_json(const GpuUnwatchResult& r) { return {{"wasWatching", r.was_watching}}; }

}  // namespace ferry::protocol
