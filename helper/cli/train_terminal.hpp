// The terminal side of `ferry train`, shared by its one-process form (train_command.cpp) and its
// many-rank form (train_ranks_command.cpp): the options, the inputs (project, config, env), the
// view that draws events and the trainer's build, and the Ctrl-C pipe.
#pragma once

#include <expected>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/terminal.hpp"
#include "helper/cli/commands.hpp"
#include "helper/deploy/project_config.hpp"
#include "helper/train/build_progress.hpp"
#include "helper/train/train_event.hpp"
#include "helper/train/train_progress.hpp"

namespace ferry::cli::train_cli {

namespace fs = std::filesystem;

struct TrainCliOptions {
  std::string launch;  // a ferry.json launch entry of kind "train", instead of CONFIG
  std::string config;
  bool resume = false, detach = false, json = false, no_sync = false;
  std::string trainer;
  std::string hosts;          // --hosts a,b: one training over these hosts
  int nproc_per_host = 1;
  std::string master_addr;    // default: the first host's address as ssh resolves it
  int master_port = 29500;
  std::string host;           // train on this host instead of ferry.json's (ferry resume --host)
  std::optional<int> nodes;   // a Slurm project: this many nodes instead of ferry.json's slurm.nodes
};

inline std::size_t terminal_width() {
  const auto size = platform::terminal_size(1);
  return size && size->columns > 20 ? static_cast<std::size_t>(size->columns - 1) : 100;
}

// Writes event lines and the bar. On a terminal the bar is redrawn in place; elsewhere (a pipe,
// a CI log) each step event is one plain line.
class TerminalView {
 public:
  explicit TerminalView(bool json) : json_(json), tty_(platform::is_terminal(1)), width_(terminal_width()) {}

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

  // The trainer's build on the box (first train on a box, or after a ferry or torch upgrade):
  // a bar redrawn in place on a terminal, a line per stage and per build step elsewhere.
  void build(const training::BuildProgressParser& build) {
    std::lock_guard lock(mu_);
    if (json_) {
      const auto& p = build.progress();
      nlohmann::json j{{"event", "trainer_build"}, {"stage", p.stage}, {"done", p.done}, {"total", p.total},
                       {"elapsed_s", p.elapsed_seconds}, {"message", p.message}};
      if (p.eta_seconds) j["eta_s"] = *p.eta_seconds;
      std::cerr << j.dump() << "\n" << std::flush;
      return;
    }
    if (tty_) {
      std::cerr << "\r\033[K" << build.bar(width_) << (build.progress().stage == "ready" ? "\n" : "") << std::flush;
    } else {
      std::cerr << build.bar(width_) << "\n" << std::flush;
    }
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

// CONFIG or --launch NAME resolved; the error is the exit status (after a message on stderr).
std::expected<TrainInputs, int> train_inputs(const GlobalOptions& g, const TrainCliOptions& o);

// --hosts / --nproc-per-host (train_ranks_command.cpp).
int run_train_ranks(const GlobalOptions& g, const TrainCliOptions& o);
// One process on the project's host (or o.host): train_command.cpp.
int run_train(const GlobalOptions& g, const TrainCliOptions& o);

}  // namespace ferry::cli::train_cli
