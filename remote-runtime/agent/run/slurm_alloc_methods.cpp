// slurm/allocate, slurm/jobs, slurm/cancel, --slurm-hold and --job-link: see slurm_alloc_methods.hpp.
#include "remote-runtime/agent/run/slurm_alloc_methods.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "protocol/messages.hpp"
#include "protocol/slurm_alloc.hpp"
#include "remote-runtime/agent/command_capture.hpp"
#include "remote-runtime/agent/run/run_store.hpp"
#include "remote-runtime/agent/run/slurm_job.hpp"

extern char** environ;

namespace ferry::agent::run {

namespace {

namespace fs = std::filesystem;
namespace ec = protocol::error_code;
using namespace std::chrono_literals;
using protocol::ResponseError;

// The agent's environment with `overrides` ("NAME=value") laid over it.
std::vector<std::string> merged_env(const std::vector<std::string>& overrides) {
  std::vector<std::string> env;
  auto name_of = [](const std::string& e) { return e.substr(0, e.find('=')); };
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    bool replaced = false;
    for (const auto& o : overrides) replaced = replaced || name_of(o) == name_of(entry);
    if (!replaced) env.push_back(std::move(entry));
  }
  for (const auto& o : overrides)
    if (o.find('=') != std::string::npos) env.push_back(o);
  return env;
}

ResponseError slurm_error(const std::string& what, const std::string& why) {
  return ResponseError{ec::kIoError, what + ": " + why, {}};
}

std::expected<protocol::SlurmJobIdResult, ResponseError> allocate(const protocol::SlurmAllocateParams& p, const fs::path& state_dir) {
  // sbatch copies the script when it submits: a private file of this call's own is enough.
  const fs::path script = state_dir / ("alloc-" + std::to_string(::getpid()) + "-" + std::to_string(::gettid()) + ".sbatch");
  {
    std::ofstream out(script, std::ios::binary | std::ios::trunc);
    out << protocol::hold_script(agent_file_path());
    if (!out) return std::unexpected(slurm_error("writing " + script.string(), std::strerror(errno)));
  }
  fs::permissions(script, fs::perms::owner_all, fs::perm_options::replace);
  std::vector<std::string> sbatch{"sbatch"};
  for (auto& a : protocol::allocation_sbatch_arguments(p.options, p.name, p.cwd)) sbatch.push_back(std::move(a));
  sbatch.push_back(script.string());
  auto out = capture(sbatch, 120s, merged_env(p.env));
  std::error_code ignored;
  fs::remove(script, ignored);
  if (!out) return std::unexpected(slurm_error("sbatch", out.error()));
  std::string id = out->substr(0, out->find_first_of(";\n"));
  if (id.empty()) return std::unexpected(slurm_error("sbatch", "printed no job id"));
  return protocol::SlurmJobIdResult{id};
}

std::expected<protocol::SlurmJobsResult, ResponseError> jobs(const protocol::SlurmJobsParams& p) {
  auto out = capture(protocol::squeue_arguments(p.name), 60s, merged_env(p.env));
  if (!out) return std::unexpected(slurm_error("squeue", out.error()));
  return protocol::SlurmJobsResult{protocol::parse_squeue(*out)};
}

std::expected<protocol::SlurmJobsResult, ResponseError> cancel(const protocol::SlurmJobsParams& p) {
  // Only a job of this user's with this name: a stale id from the helper cannot end another job.
  auto listed = jobs(p);
  if (!listed) return std::unexpected(listed.error());
  bool known = false;
  for (const auto& j : listed->jobs) known = known || j.job_id == p.job_id;
  if (!known) return protocol::SlurmJobsResult{};
  if (auto r = capture({"scancel", p.job_id}, 60s, merged_env(p.env)); !r) return std::unexpected(slurm_error("scancel", r.error()));
  return listed;
}

volatile std::sig_atomic_t g_end = 0;
void on_end(int) { g_end = 1; }

}  // namespace

void bind_slurm_alloc_methods(protocol::BindingTable& table, const fs::path& state_dir) {
  table.request<protocol::SlurmAllocateParams, protocol::SlurmJobIdResult>(
      protocol::method::kSlurmAllocate,
      [state_dir](const protocol::SlurmAllocateParams& p, protocol::CallContext&) { return allocate(p, state_dir); });
  table.request<protocol::SlurmJobsParams, protocol::SlurmJobsResult>(
      protocol::method::kSlurmJobs, [](const protocol::SlurmJobsParams& p, protocol::CallContext&) { return jobs(p); });
  table.request<protocol::SlurmJobsParams, protocol::SlurmJobsResult>(
      protocol::method::kSlurmCancel, [](const protocol::SlurmJobsParams& p, protocol::CallContext&) { return cancel(p); });
}

int hold_allocation() {
  struct sigaction sa {};
  sa.sa_handler = on_end;
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGCONT}) ::sigaction(sig, &sa, nullptr);
  sigset_t none;
  sigemptyset(&none);
  // SIGCONT comes before Slurm's SIGTERM on a preemption or cancel: only TERM, INT and HUP end it.
  for (;;) {
    ::sigsuspend(&none);
    if (g_end) return 0;
  }
}

int start_job_link() {
  std::string line;
  for (char c; line.size() < 64 * 1024;) {
    const auto n = ::read(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || c == '\n') break;
    line += c;
  }
  const auto j = protocol::json::parse(line, nullptr, false);
  if (!j.is_object() || !j.contains("jobId") || !j["jobId"].is_string() || !j.contains("root") || !j["root"].is_string()) {
    std::cerr << "ferry-agent --job-link: expected {jobId, root, node?, env?} on the first line\n";
    return 2;
  }
  const std::string job = j["jobId"].get<std::string>();
  const std::string node = j.value("node", std::string());
  for (const auto& e : j.value("env", std::vector<std::string>{})) {  // srun and the agent it starts inherit them
    const auto eq = e.find('=');
    if (eq != std::string::npos) ::setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
  }
  // The job's own state dir: its runs are the compute node's, not the login node's.
  const auto state_dir = default_state_dir() / ("job-" + job);
  auto argv = protocol::srun_agent_arguments(job, node, agent_file_path(), j["root"].get<std::string>(), state_dir.string());
  std::vector<char*> args;
  for (auto& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  std::cerr << "ferry-agent --job-link: cannot start srun: " << std::strerror(errno) << "\n";
  return 127;
}

}  // namespace ferry::agent::run
