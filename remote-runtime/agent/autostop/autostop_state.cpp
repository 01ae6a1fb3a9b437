// Autostop's state files: see autostop_state.hpp.
#include "remote-runtime/agent/autostop/autostop_state.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>

#include <fmt/format.h>

#include "common/full_io.hpp"
#include "common/private_files.hpp"
#include "common/unique_fd.hpp"
#include "remote-runtime/agent/run/run_store.hpp"
#include "protocol/json_parse.hpp"

namespace ferry::agent::autostop {

json to_json(const Settings& s) {
  json j{{"idleSeconds", s.idle_seconds}, {"action", s.action}, {"gpuUtilBelow", s.gpu_util_below}};
  if (!s.command.empty()) j["command"] = s.command;
  if (!s.pre_stop.empty()) j["preStop"] = s.pre_stop;
  if (!s.armed_at.empty()) j["armedAt"] = s.armed_at;
  if (!s.webhook_to.empty()) j["webhookTo"] = s.webhook_to;
  if (!s.watchdog_id.empty()) j["watchdogId"] = s.watchdog_id;
  return j;
}

std::expected<Settings, std::string> settings_from_json(const json& j) {
  if (!j.is_object()) return std::unexpected("expected {idleSeconds, action, command?, preStop?, gpuUtilBelow?}");
  Settings s;
  auto idle = j.find("idleSeconds");
  if (idle == j.end() || !idle->is_number() || !(idle->get<double>() >= 1) || idle->get<double>() > 7 * 24 * 3600.0)
    return std::unexpected("/idleSeconds: expected the idle time in seconds, from 1 to 604800 (a week)");
  s.idle_seconds = idle->get<double>();
  if (auto it = j.find("action"); it != j.end()) {
    if (!it->is_string() || (*it != "stop" && *it != "notify" && *it != "command"))
      return std::unexpected("/action: expected one of \"stop\" \"notify\" \"command\"");
    s.action = it->get<std::string>();
  }
  for (auto [key, field] : {std::pair{"command", &s.command}, std::pair{"preStop", &s.pre_stop},
                            std::pair{"armedAt", &s.armed_at}, std::pair{"webhookTo", &s.webhook_to},
                            std::pair{"watchdogId", &s.watchdog_id}}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    if (!it->is_string()) return std::unexpected(std::string("/") + key + ": expected a string");
    *field = it->get<std::string>();
  }
  if (s.action == "command" && s.command.empty()) return std::unexpected("/command: expected the command to run (action \"command\")");
  if (auto it = j.find("gpuUtilBelow"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int>() < 1 || it->get<int>() > 100)
      return std::unexpected("/gpuUtilBelow: expected a percentage from 1 to 100");
    s.gpu_util_below = it->get<int>();
  }
  return s;
}

std::optional<Settings> read_settings(const Paths& p) {
  auto j = run::read_json_file(p.settings());
  if (!j) return std::nullopt;
  auto s = settings_from_json(*j);
  if (!s) return std::nullopt;
  return *s;
}

bool write_settings(const Paths& p, const Settings& s) {
  ferry::posix::make_private_dirs(p.dir());
  return run::write_json_atomic(p.settings(), to_json(s), 0600);
}

bool remove_settings(const Paths& p) {
  std::error_code ec;
  return fs::remove(p.settings(), ec);
}

void record_event(const Paths& p, const std::string& event, json detail) {
  ferry::posix::make_private_dirs(p.dir());
  detail["at"] = run::iso_utc_ms(std::chrono::system_clock::now());
  detail["event"] = event;
  std::string line = detail.dump() + "\n";
  int fd = ferry::posix::open_private(p.events(), O_WRONLY | O_APPEND);
  if (fd < 0) return;
  [[maybe_unused]] auto n = ::write(fd, line.data(), line.size());
  ::close(fd);
}

std::optional<json> last_event(const Paths& p) {
  std::ifstream in(p.events());
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  if (last.empty()) return std::nullopt;
  auto j = protocol::parse_json_text(last);
  if (!j) return std::nullopt;
  return std::move(*j);
}

ConnectionMark::ConnectionMark(const Paths& p) : file_(p.agents() / std::to_string(::getpid())) {
  // Who is connected is nobody else's business: the marks and their directory are private.
  ferry::posix::make_private_dirs(p.agents());
  const ferry::posix::UniqueFd fd(ferry::posix::open_private(file_, O_WRONLY | O_TRUNC));
  const std::string line = run::iso_utc_ms(std::chrono::system_clock::now()) + "\n";
  if (fd) [[maybe_unused]] auto n = ferry::posix::write_full(fd.get(), line.data(), line.size());
}

ConnectionMark::~ConnectionMark() {
  std::error_code ec;
  fs::remove(file_, ec);
}

namespace {

// kill(pid, 0) and /proc: alive, not a zombie, and a ferry-agent (pids are reused).
bool agent_alive(long long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  std::getline(stat, text);
  auto close = text.rfind(')');
  if (close == std::string::npos || close + 2 >= text.size() || text[close + 2] == 'Z') return false;
  std::ifstream cmd("/proc/" + std::to_string(pid) + "/cmdline");
  std::string argv0;
  std::getline(cmd, argv0, '\0');
  return argv0.find("ferry-agent") != std::string::npos;
}

}  // namespace

int live_connections(const Paths& p, long long except_pid) {
  int n = 0;
  std::error_code ec;
  for (fs::directory_iterator it(p.agents(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    char* stop = nullptr;
    long long pid = std::strtoll(name.c_str(), &stop, 10);
    if (*stop != '\0' || pid <= 0 || pid == except_pid) continue;
    if (agent_alive(pid)) ++n;
    else fs::remove(it->path(), ec);  // an agent that died without cleaning up
  }
  return n;
}

int live_runs(const fs::path& state_dir) {
  run::RunStore store(state_dir);
  int n = 0;
  for (const auto& id : store.ids(/*unended_only=*/true)) {
    auto files = store.find(id);
    if (!files) continue;
    auto status = run::read_status(*files);
    if (status && status->state == "running") ++n;
  }
  return n;
}

std::optional<std::string> busy_reason(const Paths& p, const Settings& s, const GpuUtil& gpu_util, long long except_pid) {
  if (int runs = live_runs(p.state_dir); runs > 0) return fmt::format("{} live run{}", runs, runs == 1 ? "" : "s");
  if (int agents = live_connections(p, except_pid); agents > 0)
    return agents == 1 ? std::string("a helper is connected") : fmt::format("{} helpers are connected", agents);
  if (gpu_util) {
    auto utils = gpu_util();
    for (std::size_t i = 0; i < utils.size(); ++i)
      if (utils[i] >= s.gpu_util_below) return fmt::format("GPU {} at {:.0f} %", i, utils[i]);
  }
  return std::nullopt;
}

std::optional<std::string> action_command(const Settings& s) {
  if (s.action == "command") return s.command;
  if (s.action == "stop") return ::geteuid() == 0 ? "shutdown -h now" : "sudo -n shutdown -h now";
  return std::nullopt;
}

}  // namespace ferry::agent::autostop
