// `ferry demo`: placeholder until its owner lands it.
#include <CLI/CLI.hpp>

#include "helper/cli/commands.hpp"

namespace ferry::cli {
void add_demo_command(CLI::App& app, GlobalOptions&) {
  auto* cmd = app.add_subcommand("demo", "not implemented yet");
  cmd->callback([] { exit_code() = 1; });
}
}  // namespace ferry::cli
