// The `ferry` sub-commands: each file in cli/ adds one to the CLI11 app.
#pragma once

#include <expected>
#include <optional>
#include <string>

namespace CLI {
class App;
}
namespace ferry::remote {
struct SshEndpointOptions;
}

namespace ferry::cli {

// Options every sub-command sees.
struct GlobalOptions {
  std::string log_level = "warn";          // spdlog level name; logs go to stderr only
  std::optional<std::string> project_dir;  // --project DIR; else walk up from cwd for ferry.json
  std::optional<std::string> ssh_config;   // -F FILE
};

// Each returns nothing; the sub-command's callback sets the process exit status via exit_code().
void add_serve_command(CLI::App& app, GlobalOptions& g);
void add_init_command(CLI::App& app, GlobalOptions& g);
void add_demo_command(CLI::App& app, GlobalOptions& g);
void add_connect_command(CLI::App& app, GlobalOptions& g);
void add_trust_command(CLI::App& app, GlobalOptions& g);
void add_doctor_command(CLI::App& app, GlobalOptions& g);

// The SSH target of connect/trust/doctor: HOST from the command line, else ferry.json's; -F, else
// ferry.json's sshConfig (defined in connect_command.cpp).
struct SshTarget {
  std::string host;
  std::string root;
  std::optional<std::string> ssh_config;
  std::string interpreter = "python3";
  std::string project_name;
};
std::expected<SshTarget, std::string> ssh_target(const GlobalOptions& g, const std::string& host_arg,
                                                 const std::string& root_arg);

remote::SshEndpointOptions endpoint_options(const SshTarget& target);

// Set by a sub-command's callback; main returns it.
int& exit_code();

}  // namespace ferry::cli
