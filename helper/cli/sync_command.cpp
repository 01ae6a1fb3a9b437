// `ferry sync [PATH...]`: push every mapping of the project to its host (the local sandbox or an
// SSH box), or only the named files, with a progress bar on a terminal, then print a one-line
// summary per mapping (or one JSON object). Also defines with_sync_engines(), which `ferry pull`
// and `ferry watch` share: it opens the right endpoint for the project's host and one engine per
// mapping over it.
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "helper/server/sync_result.hpp"
#include "common/terminal.hpp"
#include "common/wakeup.hpp"
#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cli/live_server.hpp"
#include "helper/cli/progress_bar.hpp"
#include "helper/deploy/project_config.hpp"
#include "helper/deploy/project_trust.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/sync/sync_engine.hpp"
#include "helper/sync/mapping_target.hpp"

namespace ferry::cli {

namespace fs = std::filesystem;

int with_sync_engines(const GlobalOptions& g, const std::string& who, const MappingsFn& fn,
                      const std::function<void(std::size_t, sync::SyncEngine&)>& prepare) {
  auto project = find_cli_project(g);
  if (!project) {
    std::cerr << who << ": " << project.error() << "\n";
    return exit_status::kUsage;
  }
  auto link = sync::make_project_endpoint(*project, cli_endpoint_options(g));
  if (!link) {
    std::cerr << who << ": " << link.error().message << "\n";
    return exit_status::kUsage;
  }
  auto& endpoint = link->endpoint;
  // The engines touch the endpoint only in their calls, so they can get ready while the link is
  // made. Deliberately never deleted: the process ends with this command, and freeing a large
  // tree's maps node by node was most of what came after the last transfer; exit drops them at
  // once. finish() does what matters of the destructor (the state saved, the writer thread joined).
  std::vector<MappingEngine> engines;
  for (std::size_t i = 0; i < link->targets.size(); ++i)
    engines.push_back({new sync::SyncEngine(*endpoint, link->targets[i]), &link->targets[i], &project->mappings[i]});
  std::jthread preparing;
  if (prepare)
    preparing = std::jthread([&] {
      for (std::size_t i = 0; i < engines.size(); ++i) prepare(i, *engines[i].engine);
    });
  const bool connected = connect_cli_endpoint(*link, who);
  if (preparing.joinable()) preparing.join();
  auto finish_all = [&engines] {
    for (auto& e : engines) e.engine->finish();
  };
  if (!connected) {
    finish_all();
    return exit_status::kFailed;
  }
  int rc = fn(*project, engines, endpoint->description());
  spdlog::debug("sync: closing the link");
  {
    std::jthread saving(finish_all);  // local files only, beside the close
    endpoint->close();
  }
  spdlog::debug("sync: state saved, link closed");
  return rc;
}

std::function<bool()> stop_on_ctrl_c() {
  return platform::first_interrupt_flag("\nferry: stopping after the requests in flight (Ctrl-C again quits at once)\n");
}

namespace {

struct SyncCliOptions {
  bool dry_run = false, mirror = false, no_delete = false, force = false, yes = false, json = false;
  std::vector<std::string> paths;  // only these files (sync on save); empty = the whole tree
};

// `ferry sync PATH...`: the paths as relative paths of the mappings holding them (one list per
// mapping), decided before any connect so a File Watcher saving a file in no mapping costs no SSH
// link. Such paths are skipped with a note (the watcher fires for every matching file of the IDE
// project); directories are refused (only a full sync walks a tree). Unexpected: the exit status
// to end with.
std::expected<std::vector<std::vector<std::string>>, int> sync_paths(const GlobalOptions& g,
                                                                      const std::vector<std::string>& paths) {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  fs::path start = g.project_dir ? fs::path(*g.project_dir) : cwd;
  auto file = deploy::find_project_file(start);
  auto project = file ? deploy::load_project(*file) : std::unexpected(deploy::ConfigError{});
  if (!project) return std::vector<std::vector<std::string>>{paths};  // with_sync_engines reports it
  const auto targets = sync::mapping_targets(*project);
  auto split = sync::paths_in_mappings(targets, paths, cwd);
  std::string folders;
  for (const auto& t : targets) folders += (folders.empty() ? "" : ", ") + t.local_root.string();
  for (const auto& p : split.outside)
    std::cerr << "ferry sync: " << p << " is in no mapping of ferry.json (" << folders << "); skipped\n";
  bool any = false;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    for (const auto& rel : split.inside[i]) {
      if (fs::is_directory(fs::symlink_status(targets[i].local_root / rel, ec))) {
        std::cerr << "ferry sync: " << rel << " is a directory; PATH names files (ferry sync without paths pushes the whole tree)\n";
        return std::unexpected(2);
      }
      any = true;
    }
  }
  if (!any) return std::unexpected(0);
  return std::move(split.inside);
}

}  // namespace

namespace {

// The bar from a sync/push's $/progress values: "DONE / TOTAL bytes" reports move it, any other
// message ("listing the remote: N entries") stands in its place.
std::function<void(const nlohmann::json&)> bar_from_progress(const std::shared_ptr<ProgressBar>& bar) {
  if (!bar || !bar->enabled()) return {};
  return [bar](const nlohmann::json& value) {
    const std::string message = value.value("message", "");
    unsigned long long done = 0, total = 0;
    char tail[8] = {};
    if (std::sscanf(message.c_str(), "%llu / %llu %7s", &done, &total, tail) == 3 && std::string(tail) == "bytes")
      bar->update(done, total);
    else if (!message.empty() && value.value("kind", "") == "report")
      bar->status(message);
  };
}

}  // namespace

std::optional<int> ride_live_server(const GlobalOptions& g, const LiveRequest& r) {
  if (g.ssh_config || g.trust) return std::nullopt;
  // Trusted already (an untrusted one is asked about on the normal path, once).
  auto project = load_cli_project(g);
  if (!project || project->mappings.size() != 1 || !deploy::TrustStore().check(*project).trusted()) return std::nullopt;
  auto live = LiveServer::find(*project);
  if (!live) return std::nullopt;
  nlohmann::json params = r.params;
  params["path"] = project->root.string();
  auto bar = r.json ? nullptr : std::make_shared<ProgressBar>(r.verb);
  auto answer = live->call(r.method, params, bar_from_progress(bar), stop_on_ctrl_c());
  if (answer && r.ask_held_deletes && platform::is_terminal(0)) {
    // The guard held deletes: asked here, as a sync of its own would ask.
    const auto held = nlohmann::json(answer->value("heldDeletes", nlohmann::json::array()));
    if (!held.empty()) {
      if (bar) bar->clear();
      std::cerr << r.who << ": " << held.size() << " remote paths would be deleted. Delete them? [y/N] " << std::flush;
      std::string yes;
      std::getline(std::cin, yes);
      if (yes == "y" || yes == "Y" || yes == "yes") {
        params["confirmMassDelete"] = true;
        answer = live->call(r.method, params, bar_from_progress(bar), stop_on_ctrl_c());
      }
    }
  }
  if (bar) bar->clear();
  if (!answer) {
    std::cerr << r.who << ": " << answer.error().message << "\n";
    return answer.error().code == protocol::error_code::kRequestCancelled ? exit_status::kInterrupted : exit_status::kFailed;
  }
  if (r.json) {
    std::cout << answer->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    const auto s = server::summary_from_json(*answer);
    return !s.errors.empty() ? exit_status::kFailed : (!s.conflicts.empty() || !s.held_deletes.empty()) ? exit_status::kAttention : exit_status::kOk;
  }
  return print_summary(server::summary_from_json(*answer), false, live->endpoint());
}

namespace {

// `ferry sync` through the project's live ferry (ride_live_server): the whole tree, or the named
// files of its one mapping (an IDE's file watcher saving one file: no login per save).
std::optional<int> sync_through_live_server(const GlobalOptions& g, const SyncCliOptions& o,
                                            const std::optional<std::vector<std::vector<std::string>>>& only) {
  if (only && only->size() != 1) return std::nullopt;
  LiveRequest r;
  r.who = "ferry sync";
  r.verb = "sync";
  r.method = "sync/push";
  r.params = {{"dryRun", o.dry_run}, {"force", o.force}, {"delete", o.no_delete ? "none" : o.mirror ? "mirror" : "owned"},
              {"confirmMassDelete", o.yes}};
  if (only) r.params["paths"] = only->front();
  r.json = o.json;
  r.ask_held_deletes = !o.yes && !o.dry_run;
  return ride_live_server(g, r);
}

}  // namespace

// A bar on stderr when it is a terminal; nothing otherwise (stdout stays the summary). The bar
// erases itself when done and when the last copy of the function goes.
std::function<void(std::uint64_t, std::uint64_t)> terminal_progress(const char* verb) {
  auto bar = std::make_shared<ProgressBar>(verb);
  auto update = progress_callback(bar);
  if (!update) return {};
  return [bar, update](std::uint64_t done, std::uint64_t total) {
    update(done, total);
    if (done >= total) bar->clear();
  };
}

int print_summary(const sync::SyncSummary& s, bool as_json, const std::string& where) {
  if (as_json) {
    // Paths are bytes; JSON is UTF-8: a name that is not comes out with U+FFFD, not an abort.
    std::cout << server::to_json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    for (const auto& c : s.conflicts) std::cerr << "conflict: " << c.path << ": " << c.message << "\n";
    for (const auto& e : s.errors) std::cerr << "error: " << e << "\n";
    std::cout << s.one_line() << " (" << where << ")\n";
  }
  if (!s.errors.empty()) return exit_status::kFailed;
  if (!s.conflicts.empty() || !s.held_deletes.empty()) return exit_status::kAttention;
  return exit_status::kOk;
}

int print_summaries(const std::vector<MappingSummary>& done, bool several, bool as_json, const std::string& where) {
  if (!several && done.size() == 1) return print_summary(done.front().summary, as_json, where);
  sync::SyncSummary total;
  total.local_scan.clear();
  nlohmann::json each = nlohmann::json::array();
  for (const auto& d : done) {
    sync::add_summary(total, d.summary, sync::mapping_prefix(*d.mapping));
    auto j = server::to_json(d.summary);
    j["local"] = d.mapping->local;
    j["remote"] = d.mapping->remote;
    each.push_back(std::move(j));
  }
  if (as_json) {
    auto j = server::to_json(total);
    j["mappings"] = std::move(each);
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    for (const auto& d : done) {
      const std::string prefix = sync::mapping_prefix(*d.mapping);
      for (const auto& c : d.summary.conflicts) std::cerr << "conflict: " << prefix << c.path << ": " << c.message << "\n";
      for (const auto& e : d.summary.errors) std::cerr << "error: " << prefix << e << "\n";
      std::cout << d.mapping->local << " -> " << d.mapping->remote << ": " << d.summary.one_line() << " (" << where << ")\n";
    }
  }
  if (!total.errors.empty()) return exit_status::kFailed;
  if (!total.conflicts.empty() || !total.held_deletes.empty()) return exit_status::kAttention;
  return exit_status::kOk;
}

void add_sync_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<SyncCliOptions>();
  auto* cmd = app.add_subcommand("sync", "Push every mapping of the project (or the files named) to its host: changed files only, "
                                           "deltas for large ones; one summary line per mapping");
  cmd->add_flag("--dry-run,-n", o->dry_run, "Show what would change; change nothing");
  cmd->add_flag("--delete", o->mirror, "Mirror: also delete remote-only files (never excluded or protected ones)");
  cmd->add_flag("--no-delete", o->no_delete, "Delete nothing on the remote");
  cmd->add_flag("--force", o->force, "Overwrite conflicting remote files");
  cmd->add_flag("--yes,-y", o->yes, "Confirm mass deletes without asking");
  cmd->add_flag("--json", o->json, "Print the summary as one JSON object");
  cmd->add_option("paths", o->paths, "Push only these files (absolute or relative to the cwd), each to the mapping holding "
                                     "it, as the IDE's sync on save does; paths in no mapping are skipped");
  cmd->fallthrough();
  cmd->callback([&g, o] {
    sync::SyncOptions so;
    std::optional<std::vector<std::vector<std::string>>> only;  // per mapping, when PATHs are named
    if (!o->paths.empty()) {
      auto named = sync_paths(g, o->paths);
      if (!named) {
        g.exit_code = named.error();
        return;
      }
      only = std::move(*named);
    }
    if (auto rode = sync_through_live_server(g, *o, only)) {
      g.exit_code = *rode;
      return;
    }
    so.dry_run = o->dry_run;
    so.force = o->force;
    so.deletes = o->no_delete ? sync::DeleteMode::none : o->mirror ? sync::DeleteMode::mirror : sync::DeleteMode::owned;
    so.waiting = waiting_note("ferry sync");
    // Mappings with none of the named paths are not pushed at all.
    auto wanted = [&only](std::size_t i) { return !only || (i < only->size() && !(*only)[i].empty()); };
    auto options_for = [&](std::size_t i) {
      sync::SyncOptions x = so;
      if (only) x.only_paths = (*only)[i];
      return x;
    };
    auto walk_while_connecting = [&](std::size_t i, sync::SyncEngine& engine) {
      if (wanted(i)) engine.prepare_push(options_for(i));
    };
    g.exit_code = with_sync_engines(g, "ferry sync", [&](const deploy::ProjectConfig&, std::vector<MappingEngine>& engines,
                                                         const std::string& where) {
      auto bar = o->json ? nullptr : std::make_shared<ProgressBar>("sync");
      so.progress = progress_callback(bar);
      so.listing_progress = listing_callback(bar);
      so.cancelled = stop_on_ctrl_c();
      so.confirm_mass_delete = [o, bar](const std::string& reason, std::size_t n) {
        if (o->yes) return true;
        if (!platform::is_terminal(0)) return false;
        if (bar) bar->clear();
        std::cerr << "ferry sync: " << reason << ". Delete " << n << " remote paths? [y/N] " << std::flush;
        std::string answer;
        std::getline(std::cin, answer);
        return answer == "y" || answer == "Y" || answer == "yes";
      };
      std::vector<MappingSummary> done;
      for (std::size_t i = 0; i < engines.size(); ++i) {
        if (!wanted(i)) continue;
        auto s = engines[i].engine->push(options_for(i));
        if (bar) bar->clear();  // before the summary line, which replaces it
        if (!s) {
          std::cerr << "ferry sync: " << (engines.size() > 1 ? engines[i].mapping->local + ": " : "") << s.error().message << "\n";
          return exit_status::exit_status_of(s.error().kind);
        }
        done.push_back({engines[i].mapping, std::move(*s)});
        if (done.back().summary.cancelled) break;
      }
      const int rc = print_summaries(done, engines.size() > 1, o->json, where);
      return !done.empty() && done.back().summary.cancelled ? exit_status::kInterrupted : rc;
    }, walk_while_connecting);
    if (g.exit_code == exit_status::kOk || g.exit_code == exit_status::kAttention) leave_daemon(g);
  });
}

}  // namespace ferry::cli
