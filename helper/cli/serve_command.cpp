// `ferry serve`: JSON-RPC 2.0 with LSP framing on stdin/stdout for the IDE plugins. Stdout
// carries only protocol frames; logs go to stderr at --log-level.
#include <csignal>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "helper/cli/commands.hpp"
#include "helper/server/server.hpp"

namespace ferry::cli {

void add_serve_command(CLI::App& app, GlobalOptions& g) {
  auto* cmd = app.add_subcommand(
      "serve", "Serve the editor on stdin/stdout: a language server (any LSP client: sync on save, code lenses, diagnostics) and ferry's own JSON-RPC methods");
  auto test_methods = std::make_shared<bool>(false);
  auto workers = std::make_shared<std::size_t>(4);
  // Hidden: enables ferry/testSleep for the transcript tests.
  cmd->add_flag("--test-methods", *test_methods)->group("");
  cmd->add_option("--workers", *workers, "Worker threads for long-running requests")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->callback([&g, test_methods, workers] {
    server::ServerOptions options;
    std::error_code ec;
    options.cwd = std::filesystem::current_path(ec);
    if (g.project_dir) options.project_dir = std::filesystem::absolute(*g.project_dir, ec);
    if (g.ssh_config) options.ssh_config = std::filesystem::absolute(*g.ssh_config, ec).string();
    options.test_methods = *test_methods;
    options.transport.workers = *workers;
    spdlog::info("ferry serve: JSON-RPC on stdio");
    server::Server server(std::move(options));
    g.exit_code = server.run(0, 1);
    spdlog::info("ferry serve: exiting with {}", g.exit_code);
  });
}

}  // namespace ferry::cli
