// /proc parsing and rates: see host_stats.hpp.
#include "remote-runtime/agent/host_stats.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

namespace ferry::agent {

namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::vector<std::string> words_of(std::string_view line) {
  std::istringstream in{std::string(line)};
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::optional<std::uint64_t> number(const std::string& s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  return std::stoull(s);
}

// "cpu  user nice system idle iowait irq softirq steal guest guest_nice": guest time is already
// in user and nice, so it is not added again.
std::optional<CpuJiffies> cpu_line(const std::vector<std::string>& w) {
  if (w.size() < 5) return std::nullopt;
  std::uint64_t v[8] = {};
  for (std::size_t i = 1; i < w.size() && i <= 8; ++i) {
    auto n = number(w[i]);
    if (!n) return std::nullopt;
    v[i - 1] = *n;
  }
  CpuJiffies c;
  c.total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7];
  c.busy = c.total - v[3] - v[4];
  return c;
}

double rate(std::uint64_t before, std::uint64_t after, double seconds) {
  return after >= before && seconds > 0 ? static_cast<double>(after - before) / seconds : 0.0;
}

double busy_percent(const CpuJiffies& a, const CpuJiffies& b) {
  if (b.total <= a.total || b.busy < a.busy) return 0.0;
  double p = 100.0 * static_cast<double>(b.busy - a.busy) / static_cast<double>(b.total - a.total);
  return std::round(std::clamp(p, 0.0, 100.0) * 10) / 10;
}

}  // namespace

std::optional<std::pair<CpuJiffies, std::vector<CpuJiffies>>> parse_proc_stat(std::string_view text) {
  std::optional<CpuJiffies> all;
  std::vector<CpuJiffies> cores;
  for (auto line : lines_of(text)) {
    if (!line.starts_with("cpu")) continue;
    auto w = words_of(line);
    auto c = cpu_line(w);
    if (!c) return std::nullopt;
    if (w[0] == "cpu") all = c;
    else cores.push_back(*c);
  }
  if (!all) return std::nullopt;
  return std::pair{*all, cores};
}

std::optional<MemInfo> parse_meminfo(std::string_view text) {
  MemInfo m;
  bool total = false, available = false;
  for (auto line : lines_of(text)) {
    auto w = words_of(line);
    if (w.size() < 2) continue;
    auto kib = number(w[1]);
    if (!kib) continue;
    if (w[0] == "MemTotal:") total = (m.total_bytes = *kib * 1024, true);
    if (w[0] == "MemAvailable:") available = (m.available_bytes = *kib * 1024, true);
  }
  if (!total || !available) return std::nullopt;
  return m;
}

std::optional<ByteCounters> parse_diskstats(std::string_view text) {
  static const std::regex skipped("^(loop|ram|zram|dm-|sr|fd|md).*|^(sd|vd|xvd|hd)[a-z]+[0-9]+$|^(nvme[0-9]+n[0-9]+|mmcblk[0-9]+)p[0-9]+$");
  ByteCounters out;
  bool any = false;
  for (auto line : lines_of(text)) {
    auto w = words_of(line);
    if (w.empty()) continue;
    if (w.size() < 10) return std::nullopt;
    auto read = number(w[5]), written = number(w[9]);
    if (!read || !written) return std::nullopt;
    any = true;
    if (std::regex_match(w[2], skipped)) continue;
    out.in += *read * 512;
    out.out += *written * 512;
  }
  if (!any) return std::nullopt;
  return out;
}

std::optional<ByteCounters> parse_net_dev(std::string_view text) {
  ByteCounters out;
  bool header = false;
  for (auto line : lines_of(text)) {
    auto colon = line.find(':');
    if (line.find('|') != std::string_view::npos) {
      header = true;
      continue;
    }
    if (colon == std::string_view::npos) continue;
    auto w = words_of(line.substr(colon + 1));
    std::string name(line.substr(0, colon));
    name.erase(0, name.find_first_not_of(' '));
    if (w.size() < 16) return std::nullopt;
    auto rx = number(w[0]), tx = number(w[8]);
    if (!rx || !tx) return std::nullopt;
    if (name == "lo") continue;
    out.in += *rx;
    out.out += *tx;
  }
  if (!header) return std::nullopt;
  return out;
}

HostCounters read_host_counters(const std::filesystem::path& proc) {
  HostCounters c;
  c.at = std::chrono::steady_clock::now();
  if (auto s = parse_proc_stat(read_text(proc / "stat"))) {
    c.cpu = s->first;
    c.cores = s->second;
  }
  if (auto m = parse_meminfo(read_text(proc / "meminfo"))) c.memory = *m;
  if (auto d = parse_diskstats(read_text(proc / "diskstats"))) c.disk = *d;
  if (auto n = parse_net_dev(read_text(proc / "net" / "dev"))) c.net = *n;
  auto w = words_of(read_text(proc / "loadavg"));
  if (w.size() >= 3) c.loadavg = w[0] + " " + w[1] + " " + w[2];
  return c;
}

nlohmann::json host_stats_json(const HostCounters& a, const HostCounters& b) {
  const double secs = std::chrono::duration<double>(b.at - a.at).count();
  nlohmann::json cores = nlohmann::json::array();
  for (std::size_t i = 0; i < b.cores.size(); ++i) cores.push_back(i < a.cores.size() ? busy_percent(a.cores[i], b.cores[i]) : 0.0);
  const auto used = b.memory.total_bytes - std::min(b.memory.available_bytes, b.memory.total_bytes);
  return {{"cpu", {{"percent", busy_percent(a.cpu, b.cpu)}, {"perCore", std::move(cores)}}},
          {"memory", {{"totalBytes", b.memory.total_bytes}, {"usedBytes", used}, {"availableBytes", b.memory.available_bytes}}},
          {"disk", {{"readBytesPerSec", rate(a.disk.in, b.disk.in, secs)}, {"writeBytesPerSec", rate(a.disk.out, b.disk.out, secs)}}},
          {"net", {{"rxBytesPerSec", rate(a.net.in, b.net.in, secs)}, {"txBytesPerSec", rate(a.net.out, b.net.out, secs)}}},
          {"loadavg", b.loadavg},
          {"intervalSeconds", std::round(secs * 1000) / 1000}};
}

std::optional<std::string> bottleneck_hint(const nlohmann::json& gpus, double cpu_percent) {
  if (!gpus.is_array() || gpus.empty() || cpu_percent < 85) return std::nullopt;
  for (const auto& g : gpus) {
    if (!g.contains("util_percent") || g["util_percent"].get<double>() >= 70) continue;
    return "input-bound: GPU " + std::to_string(g.value("index", 0)) + " is at " +
           std::to_string(static_cast<int>(g["util_percent"].get<double>())) + " % while the CPUs are at " +
           std::to_string(static_cast<int>(cpu_percent)) +
           " %: the GPU waits for data. Use more data-loader workers (ferry-train: \"workers\"; PyTorch: "
           "DataLoader(num_workers=N, pin_memory=True)), read memory-mapped data (ferry-train's .npy/packed "
           "datasets, numpy.memmap) instead of decoding files per step, and move augmentation/preprocessing "
           "onto the GPU.";
  }
  return std::nullopt;
}

}  // namespace ferry::agent
