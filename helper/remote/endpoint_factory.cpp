// SshTarget resolution and SshEndpointOptions: see endpoint_factory.hpp.
#include "helper/remote/endpoint_factory.hpp"

#include "helper/deploy/project_trust.hpp"

namespace ferry::remote {

std::expected<SshTarget, std::string> make_ssh_target(std::string host, std::string root,
                                                      std::optional<std::string> ssh_config,
                                                      const deploy::ProjectConfig* project) {
  SshTarget t;
  t.host = std::move(host);
  t.root = std::move(root);
  t.ssh_config = std::move(ssh_config);
  if (project) {
    // A project's host, sshConfig and interpreter count only once its user trusts it.
    if (auto trust = deploy::TrustStore().check(*project); !trust.trusted())
      return std::unexpected(deploy::untrusted_message(*project, trust));
    if (t.host.empty()) t.host = project->host;
    if (t.root.empty() && !project->mappings.empty()) t.root = project->mappings.front().remote;
    if (!t.ssh_config && project->ssh_config) t.ssh_config = project->ssh_config;
    t.interpreter = project->interpreter;
    t.project_name = project->name;
  }
  if (t.host.empty()) return std::unexpected("no HOST given and no ferry.json found (run ferry init, or name a host)");
  if (t.host == "local")
    return std::unexpected("the project's host is \"local\" (this machine): there is no SSH host to use; name one (--host HOST) "
                           "or set \"host\" in ferry.json");
  if (t.root.empty()) t.root = "~/ferry/" + (t.project_name.empty() ? std::string("default") : t.project_name);
  return t;
}

SshEndpointOptions ssh_endpoint_options(const SshTarget& t) {
  SshEndpointOptions o;
  o.host = t.host;
  o.ssh_config = t.ssh_config;
  o.remote_root = t.root;
  return o;
}

}  // namespace ferry::remote
