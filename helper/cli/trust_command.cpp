// `ferry trust HOST`: records the host's key in known_hosts after showing its fingerprint (and,
// with --fingerprint, only if it is the expected one). A changed key is never overwritten.
#include <iostream>

#include <CLI/CLI.hpp>

#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/ssh/passphrase_prompt.hpp"
#include "helper/ssh/ssh_connection.hpp"

namespace ferry::cli {
namespace {

struct TrustOptions {
  std::string host;
  std::string fingerprint;
};

int run_trust(const GlobalOptions& g, const TrustOptions& o) {
  auto target = ssh_target(g, o.host, "");
  if (!target) {
    std::cerr << "ferry trust: " << target.error() << "\n";
    return exit_status::kUsage;
  }
  auto host = ssh::resolve_host(target->host, target->ssh_config);
  if (!host) {
    std::cerr << "ferry trust: " << host.error().to_string() << "\n";
    return exit_status::kUsage;
  }
  ssh::SessionOptions so;
  so.trust_unknown = true;
  so.host_key_only = true;
  so.passphrase = ssh::terminal_passphrase_provider();  // ProxyJump hops still authenticate
  if (!o.fingerprint.empty()) so.expect_fingerprint = o.fingerprint;
  ssh::SshConnection c;
  auto r = c.connect(*host, so);
  if (!r) {
    std::cerr << "ferry trust: " << r.error().message << "\n";
    return exit_status::kFailed;
  }
  auto hk = c.host_key();
  if (hk.newly_recorded)
    std::cout << "Trusted " << ssh::known_hosts_name(hk.host, hk.port) << ": " << hk.key.type << " " << hk.fingerprint
              << "\n  recorded in " << hk.recorded_in << "\n";
  else
    std::cout << ssh::known_hosts_name(hk.host, hk.port) << " is already trusted: " << hk.key.type << " " << hk.fingerprint
              << "\n";
  return exit_status::kOk;
}

}  // namespace

void add_trust_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<TrustOptions>();
  auto* cmd = app.add_subcommand("trust", "Record HOST's key in known_hosts (check the printed fingerprint with your provider)");
  cmd->add_option("host", o->host, "ssh config alias or user@host:port")->required();
  cmd->add_option("--fingerprint", o->fingerprint, "Only trust the key if its fingerprint is this (SHA256:...)");
  cmd->fallthrough();  // -F and the other global options also work after the sub-command
  cmd->callback([&g, o] { g.exit_code = run_trust(g, *o); });
}

}  // namespace ferry::cli
