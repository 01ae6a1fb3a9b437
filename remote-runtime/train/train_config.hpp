// ferry-train's configuration: the typed form of a training config (JSON) and its validation.
// No LibTorch here: this header is included by the validator, the CLI and the tests alike.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "remote-runtime/train/expected.hpp"

namespace ferry::train {

enum class ModelKind { mlp, cnn, transformer };
enum class Task { classification, regression, language_model };
enum class DataSource { synthetic, mnist, tensor };
enum class OptimizerKind { sgd, adam, adamw };
enum class ScheduleKind { constant, step, cosine };
enum class Precision { fp32, bf16, fp16 };

struct ModelConfig {
  ModelKind kind = ModelKind::mlp;
  // mlp: input_dim -> hidden... -> output_dim
  int input_dim = 784;
  std::vector<int> hidden = {1024, 1024};
  int output_dim = 10;
  // cnn: channels x image_size x image_size input, `blocks` residual blocks of `width` channels
  int in_channels = 1;
  int image_size = 28;
  int width = 32;
  int blocks = 2;
  // transformer: decoder-only LM
  int vocab_size = 256;
  int context = 128;
  int d_model = 256;
  int layers = 4;
  int heads = 4;
  double dropout = 0.0;
};

struct DataConfig {
  DataSource source = DataSource::synthetic;
  Task task = Task::classification;
  std::int64_t samples = 8192;        // synthetic: dataset size
  std::uint64_t seed = 1234;          // synthetic: generator seed (independent of the run seed)
  std::string path;                   // mnist: directory with the IDX files; tensor: the .ftensor inputs file
  std::string labels_path;            // tensor: the .ftensor targets file
  double eval_fraction = 0.1;         // held out for evaluation
  int workers = 2;                    // background loader threads
  int prefetch = 4;                   // bounded queue depth, in batches
  bool shuffle = true;
};

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::adamw;
  double lr = 1e-3;
  double momentum = 0.9;      // sgd
  double weight_decay = 0.0;  // adamw default 0.01 when unset in JSON
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  bool nesterov = false;
};

struct ScheduleConfig {
  ScheduleKind kind = ScheduleKind::constant;
  std::int64_t warmup_steps = 0;
  std::int64_t step_size = 1000;  // step: decay every step_size steps
  double gamma = 0.1;             // step: multiplier
  double min_lr = 0.0;            // cosine: floor
};

struct CheckpointConfig {
  std::string dir = "checkpoints";
  std::int64_t every_steps = 0;   // 0: only at the end and on SIGTERM/SIGINT
  int keep_last = 3;
};

struct EvalConfig {
  std::int64_t every_steps = 0;   // 0: no periodic evaluation
  int early_stopping_patience = 0;  // evaluations without improvement before stopping; 0: off
  double min_delta = 0.0;
};

struct OnCompleteConfig {
  std::optional<std::string> command;      // run with /bin/sh -c after `done`
  std::optional<std::string> webhook_env;  // name of the env var holding the webhook URL
};

struct BatchSizeConfig {
  bool automatic = false;          // "auto"
  int value = 64;                  // when not automatic
  int max = 65536;                 // upper bound for the search
  double memory_fraction = 0.9;    // GPU: share of free memory the search may plan for
  std::optional<std::int64_t> cpu_memory_limit_bytes;  // CPU: the budget ("auto" on CPU needs it)
};

struct TrainConfig {
  ModelConfig model;
  DataConfig data;
  OptimizerConfig optimizer;
  ScheduleConfig schedule;
  std::optional<std::int64_t> epochs;     // exactly one of epochs and max_steps
  std::optional<std::int64_t> max_steps;
  BatchSizeConfig batch_size;
  int grad_accum_steps = 1;
  std::optional<double> grad_clip_norm;
  Precision precision = Precision::fp32;
  std::string device = "auto";            // "auto" | "cpu" | "cuda" | "cuda:N"
  EvalConfig eval;
  CheckpointConfig checkpoint;
  std::uint64_t seed = 42;
  std::int64_t log_every_steps = 10;
  std::string output_dir = "runs/latest"; // metrics.csv, plot.svg, events.jsonl
  int threads = 0;                        // intra-op threads on CPU; 0: LibTorch's default
  OnCompleteConfig on_complete;
};

struct ConfigError {
  std::string pointer;  // JSON pointer of the bad field
  std::string message;  // what was expected
  std::string to_string() const;
};

// Validates and fills defaults. Every bad field is reported with its pointer before any work.
Expected<TrainConfig, ConfigError> parse_train_config(const nlohmann::json& doc);
Expected<TrainConfig, ConfigError> load_train_config(const std::filesystem::path& file);
nlohmann::json to_json(const TrainConfig& config);  // normalised, defaults filled

}  // namespace ferry::train
