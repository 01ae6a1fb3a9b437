// A project's endpoint, sync target and mapping root: see project_endpoint.hpp.
#include "helper/sync/project_endpoint.hpp"

#include "helper/deploy/project_trust.hpp"
#include "helper/remote/endpoint_factory.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "helper/sync/mapping_target.hpp"

namespace ferry::sync {

namespace ec = protocol::error_code;

std::expected<ProjectEndpoint, protocol::ResponseError> make_project_endpoint(const deploy::ProjectConfig& project,
                                                                             const ProjectEndpointOptions& options) {
  // The last line of defence: the CLI and the server ask before they get here (docs/security.md).
  if (auto trust = deploy::TrustStore().check(project); !trust.trusted())
    return std::unexpected(protocol::ResponseError{ec::kProjectUntrusted, deploy::untrusted_message(project, trust),
                                                   protocol::json{{"kind", "projectUntrusted"}, {"root", project.root.string()}}});
  const deploy::Mapping& m = project.mappings.front();
  ProjectEndpoint link;
  link.targets = mapping_targets(project);
  link.target = link.targets.front();
  if (project.host == "local") {
    remote::LocalEndpointOptions o = local_endpoint_options(project, m);
    o.agent_args = options.agent_args;
    link.endpoint = std::make_unique<remote::LocalEndpoint>(std::move(o));
    link.host = "local";
    return link;
  }
  auto t = remote::make_ssh_target("", "", options.ssh_config, &project);
  if (!t)
    return std::unexpected(protocol::ResponseError{ec::kProjectInvalid, t.error(), protocol::json{{"host", project.host}}});
  remote::SshEndpointOptions o = remote::ssh_endpoint_options(*t);
  o.session.passphrase = options.passphrase;
  o.session.trust_unknown = options.trust_unknown;
  o.session.expect_fingerprint = options.expect_fingerprint;
  o.on_state = options.on_state;
  o.reconnect = options.reconnect;
  o.agent_args = options.agent_args;
  link.endpoint = std::make_unique<remote::SshEndpoint>(std::move(o));
  link.host = t->host;
  link.ssh = true;
  return link;
}

std::string mapping_root(const remote::AgentInfo& info, const SyncTarget& target) {
  std::string root = target.remote_base.empty()
                         ? info.root
                         : (std::filesystem::path(info.root) / target.remote_base).lexically_normal().string();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return root;
}

std::expected<remote::AgentInfo, protocol::ResponseError> connect_project_endpoint(ProjectEndpoint& link,
                                                                                   std::chrono::milliseconds timeout) {
  auto info = link.endpoint->connect(timeout);
  if (!info) return std::unexpected(info.error());
  link.mapping_root = mapping_root(*info, link.target);
  return info;
}

std::expected<ProjectEndpoint, protocol::ResponseError> open_project_endpoint(const deploy::ProjectConfig& project,
                                                                             const ProjectEndpointOptions& options,
                                                                             std::chrono::milliseconds timeout) {
  auto link = make_project_endpoint(project, options);
  if (!link) return std::unexpected(link.error());
  if (auto info = connect_project_endpoint(*link, timeout); !info) return std::unexpected(info.error());
  return link;
}

}  // namespace ferry::sync
