// `ferry watch`: sync on save from the command line. One full push, then a recursive inotify
// watch (helper/sync/watcher.hpp) turns each settled burst of changes into a push of just those
// paths, printing one summary line per push; Ctrl-C ends it with status 0.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "helper/server/sync_result.hpp"
#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cli/progress_bar.hpp"
#include "helper/sync/sync_engine.hpp"
#include "helper/sync/watcher.hpp"

namespace ferry::cli {

namespace {

struct WatchCliOptions {
  bool no_delete = false, yes = false, json = false;
  int quiet_ms = 100;
};

// What the signal handler may touch: an atomic flag and the watcher's eventfd write.
std::atomic<bool> g_interrupted{false};
std::atomic<sync::TreeWatcher*> g_watcher{nullptr};

extern "C" void on_interrupt(int) {
  g_interrupted.store(true);
  if (auto* w = g_watcher.load()) w->stop();
}

// Deleting this many paths at once goes through a full push: the mass-delete guard must weigh
// them against the whole remote tree, not against the batch alone.
constexpr std::size_t kDeletesForFullPush = 5;

std::string clock_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  return fmt::format("{:02}:{:02}:{:02}", tm.tm_hour, tm.tm_min, tm.tm_sec);
}

// One line per push on stdout (or one JSON object per line), errors and conflicts on stderr.
void report(const sync::SyncSummary& s, const WatchCliOptions& o, const std::string& what) {
  if (o.json) {
    auto j = server::to_json(s);
    j["trigger"] = what;
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;  // names may not be UTF-8
    return;
  }
  for (const auto& c : s.conflicts) std::cerr << "conflict: " << c.path << ": " << c.message << "\n";
  for (const auto& e : s.errors) std::cerr << "error: " << e << "\n";
  std::cout << clock_now() << " " << what << ": " << s.one_line() << std::endl;
}

}  // namespace

void add_watch_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<WatchCliOptions>();
  auto* cmd = app.add_subcommand("watch", "Sync now, then push every change as it is saved (inotify); Ctrl-C stops");
  cmd->add_flag("--no-delete", o->no_delete, "Delete nothing on the remote");
  cmd->add_flag("--yes,-y", o->yes, "Confirm mass deletes without asking");
  cmd->add_flag("--json", o->json, "One JSON summary per push instead of a line");
  cmd->add_option("--quiet-ms", o->quiet_ms, "A burst of changes ends after this many quiet milliseconds")
      ->check(CLI::Range(10, 60000))
      ->capture_default_str();
  cmd->fallthrough();
  cmd->callback([&g, o] {
    exit_code() = with_sync_target(g, "ferry watch", [&](sync::SyncEngine& engine, const std::string& where,
                                                         const sync::SyncTarget& target) {
      g_interrupted = false;
      struct sigaction sa {};
      sa.sa_handler = on_interrupt;
      ::sigemptyset(&sa.sa_mask);
      ::sigaction(SIGINT, &sa, nullptr);
      ::sigaction(SIGTERM, &sa, nullptr);

      auto push = [&](std::vector<std::string> only, const std::string& what) -> bool {
        sync::SyncOptions so;
        so.deletes = o->no_delete ? sync::DeleteMode::none : sync::DeleteMode::owned;
        so.only_paths = std::move(only);
        so.waiting = waiting_note("ferry watch");
        so.cancelled = [] { return g_interrupted.load(); };
        auto bar = o->json || !so.only_paths.empty() ? nullptr : std::make_shared<ProgressBar>("sync");
        so.progress = progress_callback(bar);
        so.listing_progress = listing_callback(bar);
        so.confirm_mass_delete = [o, bar](const std::string& reason, std::size_t n) {
          if (o->yes) return true;
          if (!::isatty(STDIN_FILENO)) return false;
          if (bar) bar->clear();
          std::cerr << "ferry watch: " << reason << ". Delete " << n << " remote paths? [y/N] " << std::flush;
          std::string answer;
          std::getline(std::cin, answer);
          return answer == "y" || answer == "Y" || answer == "yes";
        };
        auto s = engine.push(so);
        if (bar) bar->clear();
        if (!s) {
          std::cerr << "ferry watch: " << s.error().message << "\n";  // the link may come back: keep watching
          return false;
        }
        report(*s, *o, what);
        return true;
      };

      // Watch first, then push: a save during the initial push is not lost.
      sync::WatchOptions wo;
      wo.quiet = std::chrono::milliseconds(o->quiet_ms);
      auto watcher = sync::TreeWatcher::open(target.local_root, target.exclude, wo);
      if (!watcher) {
        std::cerr << "ferry watch: " << watcher.error() << "\n";
        return exit_status::kFailed;
      }
      g_watcher = watcher->get();
      if (g_interrupted) (*watcher)->stop();
      if (!push({}, "initial sync") && !g_interrupted) {
        g_watcher = nullptr;
        return exit_status::kFailed;
      }
      if (!o->json) std::cerr << "ferry watch: watching " << target.local_root.string() << " (" << where << "); Ctrl-C stops\n";

      int rc = 0;
      // `ferry watch | head -3`: once the reader of stdout is gone (EPIPE: SIGPIPE is ignored,
      // main.cpp), stop as SIGPIPE used to stop us, instead of pushing for nobody.
      auto reader_gone = [&] {
        if (std::cout.good()) return false;
        std::cerr << "ferry watch: stdout was closed (its reader went away); stopped watching\n";
        rc = 128 + SIGPIPE;
        return true;
      };
      while (!g_interrupted && !reader_gone()) {
        auto batch = (*watcher)->next(std::chrono::hours(1));
        if (!batch) {
          std::cerr << "ferry watch: " << batch.error() << "\n";
          rc = 1;
          break;
        }
        if (!*batch) continue;  // an hour without changes, or stopped
        const sync::WatchBatch& b = **batch;
        if (b.rescan) {
          push({}, "rescan (" + b.reason + ")");
          continue;
        }
        std::size_t gone = 0;
        for (const auto& p : b.paths) {
          struct stat st {};
          if (::lstat((target.local_root / p).c_str(), &st) != 0) ++gone;
        }
        if (gone >= kDeletesForFullPush) push({}, fmt::format("{} paths removed", gone));
        else push(b.paths, b.paths.size() == 1 ? b.paths.front() : fmt::format("{} paths", b.paths.size()));
      }
      g_watcher = nullptr;
      return rc;
    });
  });
}

}  // namespace ferry::cli
