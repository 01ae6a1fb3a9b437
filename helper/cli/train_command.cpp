// `ferry train CONFIG|--launch NAME [--resume] [--detach] [--json]`: sync, run ferry-train CONFIG on the
// project's host as a run (it survives a dropped link), show its events as a progress bar (or
// pass the JSON lines through), pull the plot, CSV and newest checkpoint back, and exit with
// ferry-train's status. Ctrl-C interrupts ferry-train, which checkpoints and exits 130.
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <iostream>
#include <memory>
#include <mutex>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "helper/cli/commands.hpp"
#include "helper/deploy/launch_target.hpp"
#include "helper/deploy/project_config.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/run/interrupt_escalation.hpp"
#include "helper/run/run_exit.hpp"
#include "helper/sync/sync_engine.hpp"
#include "helper/train/train_progress.hpp"
#include "helper/train/train_session.hpp"
#include "helper/sync/mapping_target.hpp"

namespace ferry::cli {
namespace {

namespace fs = std::filesystem;

struct TrainCliOptions {
  std::string launch;  // a ferry.json launch entry of kind "train", instead of CONFIG
  std::string config;
  bool resume = false, detach = false, json = false, no_sync = false;
  std::string trainer;
};

// Ctrl-C while following: the handler only writes to a pipe; the follow loop acts on it.
int g_interrupt_pipe[2] = {-1, -1};
void on_sigint(int) {
  const int saved = errno;
  if (g_interrupt_pipe[1] >= 0) {
    char c = 1;
    [[maybe_unused]] auto n = ::write(g_interrupt_pipe[1], &c, 1);
  }
  errno = saved;
}

std::size_t terminal_width() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) return ws.ws_col - 1;
  return 100;
}

// Writes event lines and the bar. On a terminal the bar is redrawn in place; elsewhere (a pipe,
// a CI log) each step event is one plain line.
class TerminalView {
 public:
  explicit TerminalView(bool json) : json_(json), tty_(::isatty(STDOUT_FILENO) == 1), width_(terminal_width()) {}

  void event(const training::TrainEvent& e, std::string_view line) {
    std::lock_guard lock(mu_);
    if (json_) {
      std::cout << line << "\n" << std::flush;
      return;
    }
    auto lines = progress_.on_event(e);
    clear_bar();
    for (const auto& l : lines) std::cout << l << "\n";
    if (e.kind == "step" || e.kind == "start") {
      if (tty_) {
        std::cout << progress_.bar(width_);
        bar_shown_ = true;
      } else if (e.kind == "step") {
        std::cout << progress_.bar(width_) << "\n";
      }
    }
    std::cout << std::flush;
  }

  void other_stdout(std::string_view line) {
    std::lock_guard lock(mu_);
    clear_bar();
    std::cout << line << "\n";
    redraw();
  }

  void stderr_bytes(std::string_view bytes) {
    std::lock_guard lock(mu_);
    clear_bar();
    std::cerr << bytes << std::flush;
    redraw();
  }

  // A note from ferry itself (stderr), kept apart from the bar.
  void note(const std::string& text) {
    std::lock_guard lock(mu_);
    clear_bar();
    std::cerr << "ferry train: " << text << "\n" << std::flush;
    redraw();
  }

  void finish() {
    std::lock_guard lock(mu_);
    if (bar_shown_) std::cout << "\n" << std::flush;
    bar_shown_ = false;
  }

 private:
  void clear_bar() {
    if (bar_shown_) std::cout << "\r\033[K" << std::flush;
    bar_shown_ = false;
  }
  void redraw() {
    if (tty_ && !json_ && progress_.started()) {
      std::cout << progress_.bar(width_) << std::flush;
      bar_shown_ = true;
    }
  }

  std::mutex mu_;
  bool json_;
  bool tty_;
  std::size_t width_;
  bool bar_shown_ = false;
  training::TrainProgress progress_;
};

// The project and the config file to train: CONFIG (the project is the one around it unless
// --project says otherwise) or --launch NAME (the project from --project or the cwd).
struct TrainInputs {
  deploy::ProjectConfig project;
  fs::path config;
  std::map<std::string, std::string> env;
};

std::expected<TrainInputs, int> train_inputs(const GlobalOptions& g, const TrainCliOptions& o) {
  constexpr const char* who = "ferry train";
  if (o.launch.empty() == o.config.empty()) {
    std::cerr << who << ": give a CONFIG file or --launch NAME (one of the two)\n";
    return std::unexpected(run::kUsageFailure);
  }
  std::error_code ec;
  fs::path config = o.config.empty() ? fs::path() : fs::absolute(o.config, ec);
  // CONFIG: the project around it; --launch: the one around the cwd (--project wins over both).
  auto project = find_cli_project(g, o.launch.empty() ? config.parent_path() : fs::current_path(ec));
  if (!project) {
    std::cerr << who << ": " << project.error() << "\n";
    return std::unexpected(run::kUsageFailure);
  }
  std::map<std::string, std::string> env = project->env;
  if (!o.launch.empty()) {
    auto entry = deploy::find_launch(*project, o.launch);
    auto path = entry ? deploy::train_config_path(*project, **entry) : std::unexpected(entry.error());
    if (!path) {
      std::cerr << who << ": " << path.error() << "\n";
      return std::unexpected(run::kUsageFailure);
    }
    config = *path;
    env = deploy::launch_env(*project, **entry);
  }
  if (!fs::is_regular_file(config, ec)) {
    std::cerr << who << ": no config file " << config.string()
              << " (give the path of a ferry-train config, a JSON file inside the project; samples/train has examples)\n";
    return std::unexpected(run::kUsageFailure);
  }
  return TrainInputs{std::move(*project), std::move(config), std::move(env)};
}

int run_train(const GlobalOptions& g, const TrainCliOptions& o) {
  constexpr const char* who = "ferry train";
  auto inputs = train_inputs(g, o);
  if (!inputs) return inputs.error();
  const fs::path& config = inputs->config;
  const deploy::ProjectConfig& project = inputs->project;
  const bool local = project.host == "local";
  std::atomic<training::TrainSession*> live{nullptr};
  sync::ProjectEndpointOptions eo = cli_endpoint_options(g);
  // A training run outlives link drops: reconnect and re-attach where the stream stopped.
  eo.reconnect = true;
  eo.on_state = [&live](const remote::HostState& s) {
    auto* session = live.load();
    if (s.state == "reconnecting") {
      std::cerr << "ferry train: link to " << s.host << " lost (" << s.message << "); the run goes on, reconnecting\n";
      if (session) session->link_lost();
    } else if (s.state == "connected" && session) {
      session->link_restored();
    }
  };
  auto made = sync::make_project_endpoint(project, eo);
  if (!made) {
    std::cerr << who << ": " << made.error().message << "\n";
    return run::kUsageFailure;
  }
  if (!connect_cli_endpoint(*made, who)) return run::kFerryFailure;
  auto& endpoint = made->endpoint;
  sync::SyncEngine engine(*endpoint, made->target);

  TerminalView view(o.json);
  training::TrainSinks sinks;
  sinks.on_event = [&view](const training::TrainEvent& e, std::string_view line) { view.event(e, line); };
  sinks.on_other_stdout = [&view](std::string_view line) { view.other_stdout(line); };
  sinks.on_stderr = [&view](std::string_view bytes) { view.stderr_bytes(bytes); };
  training::TrainSession session(*endpoint, engine, sinks);
  training::TrainRequest request;
  request.config = config;
  request.resume = o.resume;
  request.sync = !o.no_sync;
  request.binary = o.trainer;
  request.local_host = local;
  request.env = inputs->env;
  auto id = session.start(request);
  if (!id) {
    std::cerr << who << ": " << id.error() << "\n";
    return run::kFerryFailure;
  }
  live = &session;
  if (const auto& s = session.sync_summary()) {
    std::cerr << "synced: " << s->one_line() << "\n";
    for (const auto& c : s->conflicts) std::cerr << "ferry train: sync conflict (not overwritten): " << c.path << "\n";
  }
  std::string command;
  for (const auto& a : session.launch().argv) command += (command.empty() ? "" : " ") + a;
  std::cerr << fmt::format("run {}: {} (in {} on {})\n", *id, command, session.launch().cwd, endpoint->description());
  if (o.detach) {
    std::cout << *id << "\n";
    std::cerr << "detached; `ferry attach " << *id << "` follows it, `ferry kill " << *id << " --signal INT` stops it with a checkpoint\n";
    live = nullptr;
    return 0;
  }

  if (::pipe2(g_interrupt_pipe, O_CLOEXEC | O_NONBLOCK) != 0) g_interrupt_pipe[0] = g_interrupt_pipe[1] = -1;
  struct sigaction sa {}, old {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &old);
  run::InterruptEscalation escalation;
  auto followed = session.follow(g_interrupt_pipe[0], [&] {
    char buf[16];
    while (::read(g_interrupt_pipe[0], buf, sizeof buf) > 0) {
    }
    auto step = escalation.next(*id);
    auto sent = session.signal(step.signal);
    if (!sent) {
      view.note("sending SIG" + step.signal + ": " + sent.error());
    } else if (escalation.presses() == 1) {
      const std::string again = o.launch.empty() ? o.config : "--launch " + o.launch;
      view.note("sent SIGINT to ferry-train (run " + *id + "): it writes a checkpoint and exits 130; `ferry train " + again +
                " --resume` continues. Ctrl-C again sends SIGTERM.");
    } else {
      view.note(step.note);
    }
  });
  ::sigaction(SIGINT, &old, nullptr);
  ::close(g_interrupt_pipe[0]);
  ::close(g_interrupt_pipe[1]);
  g_interrupt_pipe[0] = g_interrupt_pipe[1] = -1;
  live = nullptr;
  view.finish();
  if (!followed) {
    std::cerr << who << ": " << followed.error() << "\n";
    return run::kFerryFailure;
  }
  const int status = run::exit_status(*followed);
  if (session.saw_done() || session.last_checkpoint()) {
    auto pulled = session.pull_outputs();
    for (const auto& n : pulled.notes) std::cerr << who << ": " << n << "\n";
    std::ostream& out = o.json ? std::cerr : std::cout;
    for (const auto& f : pulled.files) {
      const std::string name = f.filename().string();
      const char* label = name == "plot.svg" ? "plot" : name == "metrics.csv" ? "metrics" : name == "events.jsonl" ? "events" : "checkpoint";
      out << fmt::format("{:<11}{}\n", label, f.string());
    }
  }
  if (status != 0) std::cerr << who << ": ferry-train " << run::describe(*followed) << "\n";
  return status;
}

}  // namespace

void add_train_command(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<TrainCliOptions>();
  auto* cmd = app.add_subcommand("train", "Train a ferry-train config on the project's host: sync, run, progress, pull the plot and checkpoint");
  cmd->add_option("CONFIG", o->config, "ferry-train config (JSON), inside the project's mapping (or use --launch)");
  cmd->add_option("--launch", o->launch, "Train ferry.json's launch entry NAME (kind train; run and debug entries: "
                                         "ferry run/debug --launch), with its env over ferry.json's");
  cmd->add_flag("--resume", o->resume, "Continue from the newest checkpoint in the config's checkpoint dir");
  cmd->add_flag("--detach", o->detach, "Start the run, print its id and return (ferry attach ID follows it)");
  cmd->add_flag("--json", o->json, "Pass ferry-train's JSON-lines events through to stdout instead of the progress bar");
  cmd->add_flag("--no-sync", o->no_sync, "Do not push the project first");
  cmd->add_option("--trainer", o->trainer, "ferry-train on the box (default: ferry-train on its PATH; local host: the one built with ferry)");
  cmd->callback([&g, o] { exit_code() = run_train(g, *o); });
}

}  // namespace ferry::cli
