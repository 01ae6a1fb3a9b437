// `ferry doctor [HOST]`: checks the link, the host key, the agent, the box (disk, GPUs, CUDA,
// python, torch) and SSH hardening; one line per check with the fix. --json for the IDE.
#include <chrono>
#include <iostream>
#include <map>
#include <optional>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/env/env_mirror.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/run/slurm_doctor.hpp"
#include "helper/train/trainer_install.hpp"

namespace ferry::cli {
namespace {


struct DoctorCliOptions {
  std::string host;
  bool json = false;
  int timeout_s = 30;
};

// The project's mirror of the box's packages (`ferry env sync`): its size and age. Only for the
// project's own host (a HOST argument naming another box has no mirror of this project's).
std::optional<remote::DoctorCheck> env_mirror_line(const GlobalOptions& g, const std::string& host_arg) {
  auto project = find_cli_project(g);
  if (!project || (!host_arg.empty() && host_arg != project->host)) return std::nullopt;
  auto link = sync::make_project_endpoint(*project, cli_endpoint_options(g));
  if (!link) return std::nullopt;
  const auto mirror = env::mirror_dir(env::default_cache_root(), link->host, project->interpreter);
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto c = env::mirror_check(env::read_mirror_state(mirror), now);
  return remote::DoctorCheck{"env mirror", c.status, c.detail, c.fix};
}

int run_doctor_command(const GlobalOptions& g, const DoctorCliOptions& o) {
  auto target = ssh_target(g, o.host, "");
  if (!target) {
    std::cerr << "ferry doctor: " << target.error() << "\n";
    return exit_status::kUsage;
  }
  remote::DoctorOptions d;
  d.endpoint = endpoint_options(*target);
  d.interpreter = target->interpreter;
  d.timeout = std::chrono::seconds(o.timeout_s);
  // ferry.json's env (PATH, CXX, FERRY_TRAIN_CACHE ...) counts for the trainer as in ferry train.
  auto project = find_cli_project(g, std::nullopt);
  std::vector<std::string> mapping_roots;  // the Slurm check asks whether the compute nodes see them
  if (project)
    for (const auto& m : project->mappings) mapping_roots.push_back(m.remote);
  d.extra_checks = [interpreter = target->interpreter, env = project ? project->env : std::map<std::string, std::string>{},
                     slurm = project ? project->slurm : std::nullopt, mapping_roots](remote::SshEndpoint& e) {
    std::vector<remote::DoctorCheck> checks{training::doctor_trainer_check(e, interpreter, env)};
    if (slurm)
      for (auto& c : run::doctor_slurm_checks(e, *slurm, env, mapping_roots)) checks.push_back(std::move(c));
    return checks;
  };
  auto checks = remote::run_doctor(d);
  if (auto line = env_mirror_line(g, o.host)) checks.push_back(std::move(*line));
  bool failed = false;
  for (const auto& c : checks) failed = failed || c.status == "fail";
  if (o.json) {
    nlohmann::json j{{"host", target->host}, {"ok", !failed}, {"checks", nlohmann::json::array()}};
    for (const auto& c : checks) j["checks"].push_back(remote::to_json(c));
    std::cout << j.dump(2) << "\n";
  } else {
    for (const auto& c : checks) {
      std::string tag = c.status == "pass" ? "[pass]" : c.status == "warn" ? "[warn]" : "[FAIL]";
      std::cout << tag << " " << c.name << ": " << c.detail << "\n";
      if (!c.fix.empty()) std::cout << "       fix: " << c.fix << "\n";
    }
  }
  return failed ? 1 : 0;
}

}  // namespace

void add_doctor_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<DoctorCliOptions>();
  auto* cmd = app.add_subcommand("doctor", "Check the host: link, host key, agent, disk, GPUs, CUDA, torch, SSH hardening, the env mirror's age and size");
  cmd->add_option("host", o->host, "ssh config alias or user@host:port (default: ferry.json's host)");
  cmd->add_option("--timeout", o->timeout_s, "Seconds for the connect and each check")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print the checks as JSON");
  cmd->fallthrough();  // -F and the other global options also work after the sub-command
  cmd->callback([&g, o] { g.exit_code = run_doctor_command(g, *o); });
}

}  // namespace ferry::cli
