// The training run: device choice, data, model, optimizer, schedule, AMP, checkpoints, evaluation,
// signals and completion hooks. Torch-free interface so main.cpp stays a cheap translation unit.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "remote-runtime/train/event_stream.hpp"
#include "remote-runtime/train/train_config.hpp"

namespace ferry::train {

// Exit statuses of ferry-train.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadConfig = 2;
inline constexpr int kExitOnCompleteFailed = 3;  // training done and saved, but on_complete failed
inline constexpr int kExitSigint = 130;   // checkpoint written, stopped on SIGINT
inline constexpr int kExitSigterm = 143;  // checkpoint written, stopped on SIGTERM (spot notice)

struct RunOptions {
  bool resume = false;
  std::optional<std::int64_t> max_steps;
  std::optional<std::string> output_dir;
  std::optional<std::string> device;
};

// SIGTERM/SIGINT set a flag; the loop checkpoints at the next step boundary and returns 143/130.
void install_stop_handlers();

// Runs (or resumes) training; emits events; returns one of the exit statuses above.
int run_training(TrainConfig config, const RunOptions& options, EventStream& events);

// "LibTorch 1.13.0, CUDA: no, distributed: gloo" for --version.
std::string build_description();

// Learning rate at optimizer step `step` (0-based) of `total_steps`.
double scheduled_lr(const OptimizerConfig& optimizer, const ScheduleConfig& schedule, std::int64_t step,
                    std::int64_t total_steps);

}  // namespace ferry::train
