// `ferry pull PATH...`: bring remote outputs (checkpoints, logs, plots) back into the project,
// with the same safety rule mirrored: a local file changed since the last sync is a conflict.
#include <csignal>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cli/progress_bar.hpp"
#include "helper/sync/sync_engine.hpp"

namespace ferry::cli {

namespace {

struct PullCliOptions {
  std::vector<std::string> paths;
  bool dry_run = false, force = false, json = false;
};

}  // namespace

void add_pull_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<PullCliOptions>();
  auto* cmd = app.add_subcommand("pull", "Bring remote paths (relative to the mapping) back into the project");
  cmd->add_option("paths", o->paths, "Remote files or directories, relative to the mapping root")->required();
  cmd->add_flag("--dry-run,-n", o->dry_run, "Show what would change; change nothing");
  cmd->add_flag("--force", o->force, "Take the remote's version over local edits");
  cmd->add_flag("--json", o->json, "Print the summary as one JSON object");
  cmd->fallthrough();
  cmd->callback([&g, o] {
    exit_code() = with_sync_engine(g, "ferry pull", [&](sync::SyncEngine& engine, const std::string& where) {
      sync::SyncOptions so;
      so.dry_run = o->dry_run;
      so.force = o->force;
      so.waiting = waiting_note("ferry pull");
      auto bar = o->json ? nullptr : std::make_shared<ProgressBar>("pull");
      so.progress = progress_callback(bar);
      so.listing_progress = listing_callback(bar);
      so.cancelled = stop_on_ctrl_c();
      auto s = engine.pull(o->paths, so);
      if (bar) bar->clear();  // before the summary line
      if (!s) {
        std::cerr << "ferry pull: " << s.error().message << "\n";
        return exit_status::exit_status_of(s.error().kind);
      }
      const int rc = print_summary(*s, o->json, where);
      return s->cancelled ? 128 + SIGINT : rc;
    });
  });
}

}  // namespace ferry::cli
