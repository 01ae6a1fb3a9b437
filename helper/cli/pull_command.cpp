// `ferry pull PATH...`: bring remote outputs (checkpoints, logs, plots) back into the project, each
// path from the mapping holding it, with the same safety rule mirrored: a local file changed
// since the last sync is a conflict.
#include <csignal>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cli/progress_bar.hpp"
#include "helper/sync/mapping_target.hpp"
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
  cmd->add_option("paths", o->paths,
                  "Remote files or directories, relative to the mapping root (\".\" for all); with several mappings, "
                  "relative to the project root, each going to the mapping whose folder holds it")
      ->required();
  cmd->add_flag("--dry-run,-n", o->dry_run, "Show what would change; change nothing");
  cmd->add_flag("--force", o->force, "Take the remote's version over local edits");
  cmd->add_flag("--json", o->json, "Print the summary as one JSON object");
  cmd->fallthrough();
  cmd->callback([&g, o] {
    LiveRequest live{"ferry pull", "pull", "sync/pull", {{"paths", o->paths}, {"dryRun", o->dry_run}, {"force", o->force}}, o->json};
    if (auto rode = ride_live_server(g, live)) {
      g.exit_code = *rode;
      return;
    }
    g.exit_code = with_sync_engines(g, "ferry pull", [&](const deploy::ProjectConfig& project, std::vector<MappingEngine>& engines,
                                                         const std::string& where) {
      std::vector<sync::SyncTarget> targets;
      for (const auto& e : engines) targets.push_back(*e.target);
      auto routed = sync::paths_by_mapping(project, targets, o->paths);
      if (!routed) {
        std::cerr << "ferry pull: " << routed.error() << "\n";
        return exit_status::kUsage;
      }
      sync::SyncOptions so;
      so.dry_run = o->dry_run;
      so.force = o->force;
      so.waiting = waiting_note("ferry pull");
      auto bar = o->json ? nullptr : std::make_shared<ProgressBar>("pull");
      so.progress = progress_callback(bar);
      so.listing_progress = listing_callback(bar);
      so.cancelled = stop_on_ctrl_c();
      std::vector<MappingSummary> done;
      for (std::size_t i = 0; i < engines.size(); ++i) {
        if ((*routed)[i].empty()) continue;
        auto s = engines[i].engine->pull((*routed)[i], so);
        if (bar) bar->clear();  // before the summary line
        if (!s) {
          std::cerr << "ferry pull: " << (engines.size() > 1 ? engines[i].mapping->local + ": " : "") << s.error().message << "\n";
          return exit_status::exit_status_of(s.error().kind);
        }
        done.push_back({engines[i].mapping, std::move(*s)});
        if (done.back().summary.cancelled) break;
      }
      const int rc = print_summaries(done, engines.size() > 1, o->json, where);
      return !done.empty() && done.back().summary.cancelled ? 128 + SIGINT : rc;
    });
    if (g.exit_code == exit_status::kOk || g.exit_code == exit_status::kAttention) leave_daemon(g);
  });
}

}  // namespace ferry::cli
