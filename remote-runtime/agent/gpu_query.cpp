// nvidia-smi's query mode: see gpu_query.hpp.
#include "remote-runtime/agent/gpu_query.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include "remote-runtime/agent/command_capture.hpp"

namespace ferry::agent {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kGpuFields =
    "index,uuid,name,utilization.gpu,memory.used,memory.total,power.draw,temperature.gpu,clocks.sm,clocks.mem";
constexpr std::string_view kAppFields = "gpu_uuid,pid,used_memory";

// Where drivers put nvidia-smi when the login's PATH lacks it (containers, GKE, some images).
std::string locate(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0 ? program : std::string();
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/bin:/usr/local/nvidia/bin:/usr/local/bin:/opt/bin";
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    if (!dir.empty()) {
      std::string candidate = dir + "/" + program;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    start = end + 1;
  }
  return {};
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    std::size_t comma = line.find(',', start);
    out.push_back(trim(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

// "[N/A]", "[Not Supported]", "N/A" and anything unparsable read as absent.
std::optional<double> number(std::string_view field) {
  double v = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec != std::errc() || end != field.data() + field.size()) return std::nullopt;
  return v;
}

template <typename F>
void for_each_line(std::string_view text, F&& f) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    std::string_view line = trim(text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
    if (!line.empty()) f(line);
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
}

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

std::string default_nvidia_smi() {
  const char* env = std::getenv("FERRY_NVIDIA_SMI");
  return env && *env ? env : "nvidia-smi";
}

json parse_gpu_csv(std::string_view gpus_csv, std::string_view apps_csv) {
  std::map<std::string, json, std::less<>> processes;  // gpu uuid -> [{pid, used_bytes?}]
  for_each_line(apps_csv, [&](std::string_view line) {
    auto f = split_fields(line);
    if (f.size() != 3) return;
    auto pid = number(f[1]);
    if (!pid) return;
    json p{{"pid", static_cast<long long>(*pid)}};
    if (auto mib = number(f[2])) p["used_bytes"] = static_cast<long long>(*mib * kMiB);
    processes[std::string(f[0])].push_back(std::move(p));
  });
  json gpus = json::array();
  for_each_line(gpus_csv, [&](std::string_view line) {
    auto f = split_fields(line);
    if (f.size() < 10) return;
    // A name with a comma in it spans several fields: index, uuid, name..., then seven numbers.
    const std::size_t tail = f.size() - 7;
    auto index = number(f[0]);
    if (!index) return;
    json g{{"index", static_cast<int>(*index)}};
    std::string name(f[2]);
    for (std::size_t i = 3; i < tail; ++i) name += ", " + std::string(f[i]);
    if (!name.empty() && name.front() != '[') g["name"] = name;
    if (auto v = number(f[tail])) g["util_percent"] = *v;
    if (auto v = number(f[tail + 1])) g["mem_used_bytes"] = static_cast<long long>(*v * kMiB);
    if (auto v = number(f[tail + 2])) g["mem_total_bytes"] = static_cast<long long>(*v * kMiB);
    if (auto v = number(f[tail + 3])) g["power_w"] = *v;
    if (auto v = number(f[tail + 4])) g["temp_c"] = *v;
    if (auto v = number(f[tail + 5])) g["sm_clock_mhz"] = static_cast<int>(*v);
    if (auto v = number(f[tail + 6])) g["mem_clock_mhz"] = static_cast<int>(*v);
    if (auto p = processes.find(f[1]); p != processes.end()) g["processes"] = p->second;
    gpus.push_back(std::move(g));
  });
  return gpus;
}

std::expected<json, std::string> query_gpus(const std::string& nvidia_smi, std::chrono::milliseconds timeout) {
  std::string program = locate(nvidia_smi);
  if (program.empty()) return std::unexpected(nvidia_smi + " not found");
  const auto deadline = Clock::now() + timeout;
  auto gpus = capture({program, "--query-gpu=" + std::string(kGpuFields), "--format=csv,noheader,nounits"}, timeout);
  if (!gpus) return std::unexpected(gpus.error());
  auto left = std::max(std::chrono::milliseconds(500),
                       std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
  // Without the process list the figures still stand; its absence only drops `processes`.
  auto apps = capture({program, "--query-compute-apps=" + std::string(kAppFields), "--format=csv,noheader,nounits"}, left);
  json out = parse_gpu_csv(*gpus, apps ? std::string_view(*apps) : std::string_view());
  if (out.empty()) return std::unexpected(nvidia_smi + " listed no GPU");
  return out;
}

std::vector<double> gpu_utilizations(const std::string& nvidia_smi) {
  std::vector<double> out;
  std::string program = locate(nvidia_smi);
  if (program.empty()) return out;
  auto csv = capture({program, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"}, std::chrono::seconds(10));
  if (!csv) return out;
  for_each_line(*csv, [&](std::string_view line) { out.push_back(number(line).value_or(0)); });
  return out;
}

}  // namespace ferry::agent
