// The `ferry` sub-commands: each file in cli/ adds one to the CLI11 app.
#pragma once

#include <optional>
#include <string>

namespace CLI {
class App;
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

// Set by a sub-command's callback; main returns it.
int& exit_code();

}  // namespace ferry::cli
