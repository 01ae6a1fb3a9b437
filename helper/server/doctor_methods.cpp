// doctor/run: the checks of `ferry doctor` for the IDE. SSH hosts run remote::run_doctor (the
// passphrase, if any, is asked of the IDE); the local sandbox checks its agent starts.
#include <chrono>

#include <spdlog/spdlog.h>

#include "helper/remote/endpoint_factory.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/server/host_session.hpp"
#include "helper/server/project_lookup.hpp"
#include "protocol/messages.hpp"

namespace ferry::server {

namespace p = ferry::protocol;

ssh::PassphraseProvider ide_passphrase_provider(p::OutgoingRequests& client, p::CancellationToken cancel);  // host_methods.cpp

namespace {

p::DoctorRunResult doctor_local(const std::string& project_name) {
  p::DoctorRunResult r{"local", {}};
  remote::LocalEndpointOptions options;
  options.project_name = project_name;
  remote::LocalEndpoint endpoint(std::move(options));
  const auto start = std::chrono::steady_clock::now();
  auto info = endpoint.connect();
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  if (!info) {
    r.checks.push_back({"agent", "fail", info.error().message, "build ferry-agent (cmake --build ... --target ferry-agent) or set $FERRY_AGENT"});
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

void bind_doctor_methods(p::BindingTable& table, const ServerOptions& options, HostSession& session) {
  table.request<p::DoctorRunParams, p::DoctorRunResult>(
      p::method::kDoctorRun,
      [&options, &session](const p::DoctorRunParams& params,
                           p::CallContext& ctx) -> std::expected<p::DoctorRunResult, p::ResponseError> {
        // With an explicit host the project is optional (it only supplies the root and -F).
        auto config = lookup_project(params.path, options);
        if (!config && !params.host) return std::unexpected(config.error());
        const deploy::ProjectConfig* project = config ? &*config : nullptr;
        const std::string host = params.host ? *params.host : project->host;
        auto progress = ctx.progress();
        progress.begin("Checking " + host);
        if (host == "local") {
          auto r = doctor_local(project ? project->name : std::string("default"));
          progress.end();
          return r;
        }
        auto target = remote::make_ssh_target(params.host.value_or(""), "", std::nullopt, project);
        if (!target) return std::unexpected(p::ResponseError{p::error_code::kProjectInvalid, target.error(), {}});
        remote::DoctorOptions d;
        d.endpoint = remote::ssh_endpoint_options(*target);
        d.endpoint.session.passphrase = ide_passphrase_provider(session.client(), ctx.cancellation());
        d.interpreter = target->interpreter;
        p::DoctorRunResult r{target->host, {}};
        for (const auto& c : remote::run_doctor(std::move(d))) r.checks.push_back({c.name, c.status, c.detail, c.fix});
        if (ctx.cancelled()) return std::unexpected(p::cancelled_error(ctx.method()));
        progress.end();
        return r;
      },
      p::Execution::worker);
}

}  // namespace ferry::server
