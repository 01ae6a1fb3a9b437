// `ferry serve`: placeholder until its owner lands it.
#include <CLI/CLI.hpp>

#include "helper/cli/commands.hpp"

namespace ferry::cli {
void add_serve_command(CLI::App& app, GlobalOptions&) {
  auto* cmd = app.add_subcommand("serve", "not implemented yet");
  cmd->callback([] { exit_code() = 1; });
}
}  // namespace ferry::cli
