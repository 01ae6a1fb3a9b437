// `ferry watch`: sync on save from the command line, for every mapping. One full push of each,
// then a recursive inotify watch per mapping (helper/sync/watcher.hpp) turns each settled burst
// of changes into a push of just those paths, printing one summary line per push; Ctrl-C ends it
// with status 0.
#include <atomic>
#include <chrono>
#include <ctime>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/chrono.h>
#include <fmt/format.h>

#include "helper/server/sync_result.hpp"
#include "common/terminal.hpp"
#include "common/wakeup.hpp"
#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cli/progress_bar.hpp"
#include "helper/sync/mapping_target.hpp"
#include "helper/sync/sync_engine.hpp"
#include "helper/sync/watcher.hpp"

namespace ferry::cli {

namespace {

namespace fs = std::filesystem;

struct WatchCliOptions {
  bool no_delete = false, yes = false, json = false;
  int quiet_ms = 100;
};

// Set once watching is to end (Ctrl-C, SIGTERM, a closed terminal, a failed watcher, stdout's
// reader gone); the watchers (one per mapping, in an array published while they run) are stopped.
std::atomic<bool> g_interrupted{false};
std::atomic<std::atomic<sync::TreeWatcher*>*> g_watchers{nullptr};
std::atomic<std::size_t> g_watcher_count{0};

void stop_all_watchers() {
  g_interrupted.store(true);
  auto* ws = g_watchers.load();
  const std::size_t n = ws ? g_watcher_count.load() : 0;
  for (std::size_t i = 0; i < n; ++i)
    if (auto* w = ws[i].load()) w->stop();
}

// Deleting this many paths at once goes through a full push: the mass-delete guard must weigh
// them against the whole remote tree, not against the batch alone.
constexpr std::size_t kDeletesForFullPush = 5;

std::string clock_now() {
  const std::tm tm = fmt::localtime(std::time(nullptr));  // localtime_r or localtime_s
  return fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

// Mappings push from threads of their own: their lines do not interleave.
std::mutex g_out_mu;

// One line per push on stdout (or one JSON object per line), errors and conflicts on stderr. With
// several mappings paths carry their mapping's folder, and the JSON its `mapping` (the local folder).
void report(const sync::SyncSummary& s, const WatchCliOptions& o, const std::string& what, const deploy::Mapping* mapping) {
  std::lock_guard lock(g_out_mu);
  const std::string prefix = mapping ? sync::mapping_prefix(*mapping) : std::string();
  if (o.json) {
    auto j = server::to_json(s);
    j["trigger"] = what;
    if (mapping) j["mapping"] = mapping->local;
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;  // names may not be UTF-8
    return;
  }
  for (const auto& c : s.conflicts) std::cerr << "conflict: " << prefix << c.path << ": " << c.message << "\n";
  for (const auto& e : s.errors) std::cerr << "error: " << prefix << e << "\n";
  std::cout << clock_now() << " " << (mapping ? mapping->local + ": " : "") << what << ": " << s.one_line() << std::endl;
}

// One mapping being watched: its engine, its watch, and the name its lines carry (none when the
// project has a single mapping, whose lines read as they always did).
struct Watched {
  MappingEngine m;
  std::unique_ptr<sync::TreeWatcher> watcher;
  const deploy::Mapping* label = nullptr;
};

// Pushes `only` (empty: the whole tree) of one mapping and reports it; false when it failed.
bool push_mapping(Watched& w, const WatchCliOptions& o, std::vector<std::string> only, const std::string& what, bool bar_ok) {
  sync::SyncOptions so;
  so.deletes = o.no_delete ? sync::DeleteMode::none : sync::DeleteMode::owned;
  so.only_paths = std::move(only);
  so.waiting = waiting_note("ferry watch");
  so.cancelled = [] { return g_interrupted.load(); };
  auto bar = o.json || !so.only_paths.empty() || !bar_ok ? nullptr : std::make_shared<ProgressBar>("sync");
  so.progress = progress_callback(bar);
  so.listing_progress = listing_callback(bar);
  so.confirm_mass_delete = [yes = o.yes, bar](const std::string& reason, std::size_t n) {
    if (yes) return true;
    if (!platform::is_terminal(0)) return false;
    std::lock_guard lock(g_out_mu);
    if (bar) bar->clear();
    std::cerr << "ferry watch: " << reason << ". Delete " << n << " remote paths? [y/N] " << std::flush;
    std::string answer;
    std::getline(std::cin, answer);
    return answer == "y" || answer == "Y" || answer == "yes";
  };
  auto s = w.m.engine->push(so);
  if (bar) bar->clear();
  if (!s) {
    std::lock_guard lock(g_out_mu);
    std::cerr << "ferry watch: " << (w.label ? w.label->local + ": " : "") << s.error().message << "\n";  // the link may come back
    return false;
  }
  report(*s, o, what, w.label);
  return true;
}

// `ferry watch | head -3`: once the reader of stdout is gone (EPIPE: SIGPIPE is ignored,
// main.cpp), stop as SIGPIPE used to stop us, instead of pushing for nobody.
bool reader_gone(std::atomic<int>& rc) {
  std::lock_guard lock(g_out_mu);
  if (std::cout.good()) return false;
  if (rc.exchange(exit_status::kReaderGone) != exit_status::kReaderGone) std::cerr << "ferry watch: stdout was closed (its reader went away); stopped watching\n";
  stop_all_watchers();  // the other mappings' loops stop too
  return true;
}

// One mapping's loop: each settled burst of changes becomes a push of just those paths.
void watch_loop(Watched& w, const WatchCliOptions& o, std::atomic<int>& rc, bool bar_ok) {
  const fs::path& root = w.m.target->local_root;
  while (!g_interrupted && !reader_gone(rc)) {
    auto batch = w.watcher->next(std::chrono::hours(1));
    if (!batch) {
      {
        std::lock_guard lock(g_out_mu);
        std::cerr << "ferry watch: " << batch.error() << "\n";
      }
      rc = 1;
      stop_all_watchers();
      return;
    }
    if (!*batch) continue;  // an hour without changes, or stopped
    const sync::WatchBatch& b = **batch;
    if (b.rescan) {
      push_mapping(w, o, {}, "rescan (" + b.reason + ")", bar_ok);
      continue;
    }
    std::size_t gone = 0;
    for (const auto& p : b.paths) {
      std::error_code ec;
      if (!fs::exists(fs::symlink_status(root / p, ec))) ++gone;
    }
    if (gone >= kDeletesForFullPush) push_mapping(w, o, {}, fmt::format("{} paths removed", gone), bar_ok);
    else push_mapping(w, o, b.paths, b.paths.size() == 1 ? b.paths.front() : fmt::format("{} paths", b.paths.size()), bar_ok);
  }
}

// Watches every mapping (watch first, then push: a save during the initial push is not lost),
// pushes each whole once, then follows each in a thread of its own until Ctrl-C.
int watch_mappings(std::vector<MappingEngine>& engines, const WatchCliOptions& o, const std::string& where) {
  g_interrupted = false;
  std::vector<Watched> watched;
  sync::WatchOptions wo;
  wo.quiet = std::chrono::milliseconds(o.quiet_ms);
  for (auto& m : engines) {
    wo.skipped_dirs = m.target->nested;
    auto watcher = sync::TreeWatcher::open(m.target->local_root, m.target->exclude, wo);
    if (!watcher) {
      std::cerr << "ferry watch: " << watcher.error() << "\n";
      return exit_status::kFailed;
    }
    watched.push_back({m, std::move(*watcher), engines.size() > 1 ? m.mapping : nullptr});
  }
  auto slots = std::make_unique<std::atomic<sync::TreeWatcher*>[]>(watched.size());
  for (std::size_t i = 0; i < watched.size(); ++i) slots[i] = watched[i].watcher.get();
  g_watcher_count = watched.size();
  g_watchers = slots.get();
  // Ctrl-C, SIGTERM or a closed terminal stops every watcher, from a thread of its own.
  platform::StopRequests stop;
  platform::Wakeup finished;
  std::jthread stopper([&] {
    platform::Wakeup* wakeups[] = {&finished, &stop.wakeup()};
    if (platform::wait_any(wakeups) == 1) stop_all_watchers();
  });
  auto unpublish = [&] {
    finished.raise();
    stopper.join();
    g_watchers = nullptr;
    g_watcher_count = 0;
  };
  for (auto& w : watched) {
    if (!push_mapping(w, o, {}, "initial sync", true) && !g_interrupted) {
      unpublish();
      return exit_status::kFailed;
    }
  }
  if (!o.json)
    for (const auto& w : watched) std::cerr << "ferry watch: watching " << w.m.target->local_root.string() << " (" << where << "); Ctrl-C stops\n";
  std::atomic<int> rc{0};
  {
    // A bar per mapping would fight over one terminal line: only a lone mapping shows one.
    const bool bar_ok = watched.size() == 1;
    std::vector<std::jthread> loops;
    for (std::size_t i = 1; i < watched.size(); ++i) loops.emplace_back([&, i] { watch_loop(watched[i], o, rc, bar_ok); });
    watch_loop(watched.front(), o, rc, bar_ok);
  }
  unpublish();
  return rc.load();
}

}  // namespace

void add_watch_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<WatchCliOptions>();
  auto* cmd = app.add_subcommand("watch", "Sync every mapping now, then push every change as it is saved (inotify); Ctrl-C stops");
  cmd->add_flag("--no-delete", o->no_delete, "Delete nothing on the remote");
  cmd->add_flag("--yes,-y", o->yes, "Confirm mass deletes without asking");
  cmd->add_flag("--json", o->json, "One JSON summary per push instead of a line");
  cmd->add_option("--quiet-ms", o->quiet_ms, "A burst of changes ends after this many quiet milliseconds")
      ->check(CLI::Range(10, 60000))
      ->capture_default_str();
  cmd->fallthrough();
  cmd->callback([&g, o] {
    g.exit_code = with_sync_engines(g, "ferry watch", [&](const deploy::ProjectConfig&, std::vector<MappingEngine>& engines,
                                                          const std::string& where) {
      return watch_mappings(engines, *o, where);
    });
  });
}

}  // namespace ferry::cli
