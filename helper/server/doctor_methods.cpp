// doctor/run: the checks of `ferry doctor` for the IDE. SSH hosts run remote::run_doctor (the
// passphrase, if any, is asked of the IDE); the local sandbox checks its agent starts.
#include <chrono>

#include <spdlog/spdlog.h>

#include "helper/env/env_mirror.hpp"
#include "helper/remote/agent_builds.hpp"
#include "helper/remote/endpoint_factory.hpp"
#include "helper/sync/project_endpoint.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/run/slurm_doctor.hpp"
#include "helper/train/trainer_install.hpp"
#include "helper/server/host_methods.hpp"
#include "protocol/messages.hpp"

namespace ferry::server {

namespace p = ferry::protocol;

namespace {

p::DoctorRunResult doctor_local(const std::string& project_name) {
  p::DoctorRunResult r{"local", {}};
  remote::LocalEndpointOptions options;
  options.project_name = project_name;
  for (auto& a : remote::check_agent_builds())
    if (a.arch == remote::native_arch()) r.checks.push_back({"agent " + a.arch, a.status, a.detail, a.fix});
  remote::LocalEndpoint endpoint(std::move(options));
  const auto start = std::chrono::steady_clock::now();
  auto info = endpoint.connect();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  if (!info) {
    r.checks.push_back({"agent", "fail", info.error().message, "reinstall ferry (its agent comes with it), build ferry-agent (cmake --build ... --target ferry-agent) or set $FERRY_AGENT"});
    return r;
  }
  r.checks.push_back({"connection", "pass", "local sandbox agent started in " + std::to_string(ms) + " ms", ""});
  r.checks.push_back({"agent version", "pass", "ferry-agent " + info->version + " (protocol " + std::to_string(info->protocol_version) + ")", ""});
  r.checks.push_back({"os", "pass", info->os + " " + info->arch + " (" + info->hostname + ")", ""});
  r.checks.push_back({"remote root", "pass", info->root, ""});
  endpoint.close();
  return r;
}

}  // namespace

std::expected<p::DoctorRunResult, p::ResponseError> run_doctor_checks(const ServerContext& ctx,
                                                                      const p::DoctorRunParams& params,
                                                                      p::CallContext& call) {
  // With an explicit host the project is optional (it only supplies the root and -F).
  auto config = lookup_project(params.path, ctx.workspace);
  if (!config && !params.host) return std::unexpected(config.error());
  const deploy::ProjectConfig* project = config ? &*config : nullptr;
  if (project)  // its host, sshConfig and interpreter are what the doctor would use
    if (auto admitted = ctx.sessions.trust().admit(*project, call.cancellation()); !admitted)
      return std::unexpected(admitted.error());
  const std::string host = params.host ? *params.host : project->host;
  auto progress = call.progress();
  progress.begin("Checking " + host);
  if (host == "local") {
    auto r = doctor_local(project ? project->name : std::string("default"));
    progress.end();
    return r;
  }
  // The doctor makes its own connection on purpose: how connecting goes is what it checks.
  auto target = remote::make_ssh_target(params.host.value_or(""), "", ctx.options.ssh_config, project);
  if (!target) return std::unexpected(p::ResponseError{p::error_code::kProjectInvalid, target.error(), {}});
  remote::DoctorOptions d;
  d.endpoint = remote::ssh_endpoint_options(*target);
  d.endpoint.session.passphrase = [&ctx, cancel = call.cancellation()](const std::string& key) {
    return ctx.questions.passphrase(key, cancel);
  };
  d.interpreter = target->interpreter;
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
  p::DoctorRunResult r{target->host, {}};
  for (const auto& c : remote::run_doctor(std::move(d))) r.checks.push_back({c.name, c.status, c.detail, c.fix});
  if (call.cancelled()) return std::unexpected(p::cancelled_error(call.method()));
  // The project's env mirror (`ferry env sync`), when the checked host is the project's.
  if (project && (!params.host || *params.host == project->host))
    if (auto link = sync::make_project_endpoint(*project, {})) {
      const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
      auto c = env::mirror_check(env::read_mirror_state(env::mirror_dir(env::default_cache_root(), link->host, project->interpreter)), now);
      r.checks.push_back({"env mirror", c.status, c.detail, c.fix});
    }
  progress.end();
  return r;
}

void bind_doctor_methods(p::BindingTable& table, const ServerContext& ctx) {
  table.request<p::DoctorRunParams, p::DoctorRunResult>(
      p::method::kDoctorRun,
      [&ctx](const p::DoctorRunParams& params, p::CallContext& call) { return run_doctor_checks(ctx, params, call); },
      p::Execution::worker);
}

}  // namespace ferry::server
