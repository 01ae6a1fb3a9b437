// The training loop. Deterministic on CPU: model init from the run seed, data order from seed + epoch,
// LR from the step number, and the torch generator saved in checkpoints, so resume is bit-exact.
#include "remote-runtime/train/trainer.hpp"

#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <torch/torch.h>

#include "remote-runtime/train/batch_loader.hpp"
#include "remote-runtime/train/batch_size_search.hpp"
#include "remote-runtime/train/checkpoint.hpp"
#include "remote-runtime/train/dataset.hpp"
#include "remote-runtime/train/advice.hpp"
#include "remote-runtime/train/distributed.hpp"
#include "remote-runtime/train/expected.hpp"
#include "remote-runtime/train/loss_scaler.hpp"
#include "remote-runtime/train/models.hpp"
#include "remote-runtime/train/nvml.hpp"
#include "remote-runtime/train/on_complete.hpp"
#include "remote-runtime/train/std_compat.hpp"
#include "remote-runtime/train/torch_compat.hpp"

namespace ferry::train {
namespace {

// std::numbers::pi (C++20): the same double.
constexpr double kPi = 3.14159265358979323846;

std::atomic<int> g_stop_signal{0};

extern "C" void on_stop_signal(int sig) { g_stop_signal.store(sig); }

struct RunError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "auto" and "cuda" pick the GPU of this process's LOCAL_RANK, so --nproc N on an N-GPU host spreads out.
Expected<torch::Device, std::string> resolve_device(const std::string& name, int local_rank) {
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (name == "auto" && !cuda_available()) return torch::Device(torch::kCPU);
  if (name == "auto" || name == "cuda" || starts_with(name, "cuda:")) {
    int index = cuda_available() ? local_rank % std::max(1, cuda_device_count()) : 0;
    if (name.size() > 5) {
      char* end = nullptr;
      const long n = std::strtol(name.c_str() + 5, &end, 10);
      if (*end != '\0' || n < 0) return Unexpected("bad device '" + name + "'");
      index = static_cast<int>(n);
    }
    if (!cuda_available()) {
      return Unexpected("device " + name + " requested but " +
                             (built_with_cuda() ? "no CUDA device is visible" : "this LibTorch has no CUDA support"));
    }
    if (index >= cuda_device_count()) return Unexpected("device " + name + " does not exist");
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  return Unexpected("bad device '" + name + "' (auto, cpu, cuda or cuda:N)");
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& c, std::vector<torch::Tensor> params) {
  switch (c.kind) {
    case OptimizerKind::sgd:
      return std::make_unique<torch::optim::SGD>(
          params, torch::optim::SGDOptions(c.lr).momentum(c.momentum).weight_decay(c.weight_decay).nesterov(c.nesterov));
    case OptimizerKind::adam:
      return std::make_unique<torch::optim::Adam>(
          params, torch::optim::AdamOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps).weight_decay(c.weight_decay));
    case OptimizerKind::adamw:
      return std::make_unique<torch::optim::AdamW>(
          params, torch::optim::AdamWOptions(c.lr).betas({c.beta1, c.beta2}).eps(c.eps).weight_decay(c.weight_decay));
  }
  throw RunError("unknown optimizer");
}

void set_lr(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) group.options().set_lr(lr);
}

std::filesystem::path checkpoint_dir(const TrainConfig& config) {
  std::filesystem::path dir = config.checkpoint.dir;
  return dir.is_absolute() ? dir : std::filesystem::path(config.output_dir) / dir;
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
  }
  return "?";
}

// Everything one step needs, so the probe and the real loop share the exact step code.
struct StepContext {
  Model& model;
  torch::optim::Optimizer& optimizer;
  torch::Device device;
  Task task;
  Precision precision;
  LossScaler* scaler = nullptr;
  ProcessGroupHandle* group = nullptr;
  std::optional<double> clip;
  std::vector<torch::Tensor> params;
};

torch::Tensor forward_loss(StepContext& ctx, const Batch& batch, bool non_blocking) {
  auto input = batch.input.to(ctx.device, non_blocking);
  auto target = batch.target.to(ctx.device, non_blocking);
  const bool amp = ctx.precision != Precision::fp32;
  const auto dtype = ctx.precision == Precision::fp16 ? torch::kHalf : torch::kBFloat16;
  AutocastGuard autocast(ctx.device.type(), dtype, amp);
  auto output = ctx.model.forward(input);
  auto loss = compute_loss(ctx.task, output, target);
  return loss;
}

void zero_grads(const std::vector<torch::Tensor>& params) {
  for (const auto& p : params) {
    // set_to_none: the next backward allocates fresh grads instead of reading zeros.
    const_cast<torch::Tensor&>(p).mutable_grad().reset();
  }
}

// Averages across ranks, unscales, clips and steps. Returns false when the step was skipped (fp16 overflow).
bool apply_step(StepContext& ctx) {
  std::vector<torch::Tensor> grads;
  grads.reserve(ctx.params.size());
  for (const auto& p : ctx.params) grads.push_back(p.grad());
  if (ctx.group) ctx.group->average(grads);
  bool overflow = false;
  if (ctx.scaler) {
    overflow = ctx.scaler->unscale(grads);
    ctx.scaler->update();
  }
  if (!overflow) {
    if (ctx.clip) torch::nn::utils::clip_grad_norm_(ctx.params, *ctx.clip);
    ctx.optimizer.step();
  }
  zero_grads(ctx.params);
  return !overflow;
}

std::int64_t read_proc_status_kib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string prefix = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (starts_with(line, prefix)) return std::atoll(line.c_str() + prefix.size());
  }
  return -1;
}

// CPU peak memory for the probe: reset the kernel's high-water mark (clear_refs 5), run, read VmHWM.
// This counts the whole process (dataset, model, optimizer, activations), which is what a
// cpu_memory_limit has to bound.
void reset_cpu_peak() {
#if defined(__GLIBC__)
  // main.cpp makes glibc keep freed memory; hand it back first, or an earlier, larger probe's
  // leftovers would count against this one.
  malloc_trim(0);
#endif
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
}

// The model and what trains it: made the same way for a probe and for the run.
struct Trainee {
  std::shared_ptr<Model> model;
  std::vector<torch::Tensor> params;
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  std::optional<LossScaler> scaler;

  Trainee(const TrainConfig& config, torch::Device device) : model(make_model(config.model)) {
    model->to(device);
    model->train();
    params = model->parameters();
    optimizer = make_optimizer(config.optimizer, params);
    if (config.precision == Precision::fp16) scaler.emplace(LossScaler::Options{}, device);
  }
  Trainee(const Trainee&) = delete;  // StepContext holds references into it

  StepContext step_context(const TrainConfig& config, torch::Device device, ProcessGroupHandle* group) {
    return StepContext{*model, *optimizer, device, config.data.task, config.precision, scaler ? &*scaler : nullptr,
                       group, config.grad_clip_norm, params};
  }

  Expected<void, std::string> restore(CheckpointData& from, int cuda_index) {
    if (auto r = load_model_state(from, *model); !r) return r;
    if (auto r = load_optimizer_state(from, *optimizer, *model); !r) return r;
    if (auto r = load_rng_state(from, cuda_index); !r) return r;
    if (scaler && from.meta.contains("scaler")) {
      scaler->restore(from.meta["scaler"].at("scale").get<double>(), from.meta["scaler"].at("growth_tracker").get<std::int64_t>());
    }
    return {};
  }
};

Batch probe_batch(const Dataset& data, int batch, bool pin) {
  auto rows = torch::arange(batch, torch::kLong).remainder(data.size());
  return gather_batch(data, rows, pin);
}

ProbeOutcome run_probe(const TrainConfig& config, const Dataset& data, torch::Device device, int batch) {
  try {
    Trainee trainee(config, device);
    auto ctx = trainee.step_context(config, device, nullptr);
    auto& scaler = trainee.scaler;
    if (device.is_cuda()) {
      cuda_synchronize(device.index());
      cuda_empty_cache();
      cuda_reset_peak_memory(device.index());
    } else {
      reset_cpu_peak();
    }
    // Two steps: the first allocates optimizer state, the second shows the steady-state peak.
    for (int i = 0; i < 2; ++i) {
      auto b = probe_batch(data, batch, false);
      auto loss = forward_loss(ctx, b, false);
      (scaler ? scaler->scale(loss) : loss).backward();
      apply_step(ctx);
    }
    std::int64_t peak = 0;
    if (device.is_cuda()) {
      cuda_synchronize(device.index());
      peak = cuda_peak_reserved_bytes(device.index());
    } else {
      peak = read_proc_status_kib("VmHWM") * 1024;
    }
    return ProbeOutcome::peak(peak);
  } catch (const c10::Error& e) {
    if (!is_out_of_memory_message(e.what())) throw;
  } catch (const std::bad_alloc&) {
  }
  if (device.is_cuda()) cuda_empty_cache();
  return ProbeOutcome::oom();
}

struct EvalResult {
  double loss = 0;
  std::optional<double> accuracy;
};

EvalResult evaluate(StepContext& ctx, const Dataset& eval, std::int64_t batch) {
  torch::NoGradGuard no_grad;
  ctx.model.eval();
  double total = 0, correct = 0;
  std::int64_t seen = 0;
  for (std::int64_t start = 0; start < eval.size(); start += batch) {
    const auto n = std::min(batch, eval.size() - start);
    auto rows = torch::arange(start, start + n, torch::kLong);
    auto b = gather_batch(eval, rows, false);
    auto input = b.input.to(ctx.device);
    auto target = b.target.to(ctx.device);
    torch::Tensor output;
    {
      AutocastGuard autocast(ctx.device.type(), ctx.precision == Precision::fp16 ? torch::kHalf : torch::kBFloat16,
                             ctx.precision != Precision::fp32);
      output = ctx.model.forward(input);
    }
    output = output.to(torch::kFloat);
    total += compute_loss(ctx.task, output, target).item<double>() * static_cast<double>(n);
    if (ctx.task == Task::classification) correct += output.argmax(1).eq(target).sum().item<double>();
    seen += n;
  }
  ctx.model.train();
  EvalResult r;
  if (seen > 0) {
    r.loss = total / static_cast<double>(seen);
    if (ctx.task == Task::classification) r.accuracy = correct / static_cast<double>(seen);
  }
  return r;
}

struct LoopState {
  std::int64_t step = 0;
  std::int64_t epoch = 0;
  std::int64_t batch_in_epoch = 0;  // micro-batches consumed in `epoch`
  double best_eval = std::numeric_limits<double>::infinity();
  int evals_without_improvement = 0;
  std::int64_t batch_size = 0;
};

nlohmann::json loop_meta(const LoopState& s) {
  return {{"step", s.step},
          {"epoch", s.epoch},
          {"batch_in_epoch", s.batch_in_epoch},
          {"best_eval", std::isfinite(s.best_eval) ? nlohmann::json(s.best_eval) : nlohmann::json(nullptr)},
          {"evals_without_improvement", s.evals_without_improvement},
          {"batch_size", s.batch_size}};
}

LoopState loop_state_from(const nlohmann::json& loop) {
  LoopState s;
  s.step = loop.at("step").get<std::int64_t>();
  s.epoch = loop.at("epoch").get<std::int64_t>();
  s.batch_in_epoch = loop.at("batch_in_epoch").get<std::int64_t>();
  if (!loop.at("best_eval").is_null()) s.best_eval = loop.at("best_eval").get<double>();
  s.evals_without_improvement = loop.at("evals_without_improvement").get<int>();
  s.batch_size = loop.at("batch_size").get<std::int64_t>();
  return s;
}

// A phase of the run either hands on its result or stops the run: the error is ferry-train's exit
// status, and the phase has already emitted the error event that explains it.
template <class T>
using Phase = Expected<T, int>;

// The error events of one process.
struct Reporter {
  EventStream& events;
  int rank = 0;

  // Something went wrong while running: exit 1, the event names the rank.
  int fail(const std::string& stage, const std::string& message) const {
    events.emit("error", {{"stage", stage}, {"message", message}, {"rank", rank}});
    return kExitFailure;
  }
  // The config asks for what this run cannot do: exit 2, the event points at the member.
  int bad_config(const std::string& stage, const std::string& pointer, const std::string& message) const {
    events.emit("error", {{"stage", stage}, {"pointer", pointer}, {"message", message}});
    return kExitBadConfig;
  }
};

void apply_overrides(TrainConfig& config, const RunOptions& options) {
  if (options.output_dir) config.output_dir = *options.output_dir;
  if (options.device) config.device = *options.device;
  if (options.max_steps) {
    config.max_steps = *options.max_steps;
    config.epochs.reset();
  }
}

Phase<torch::Device> choose_device(const TrainConfig& config, int local_rank, const Reporter& report) {
  auto device = resolve_device(config.device, local_rank);
  if (!device) return Unexpected(report.bad_config("device", "/device", device.error()));
  if (config.precision == Precision::fp16 && !device->is_cuda())
    return Unexpected(report.bad_config("config", "/precision", "fp16 needs a CUDA device; use bf16 on CPU"));
  return *device;
}

Expected<CheckpointData, std::string> latest_checkpoint(const std::filesystem::path& dir) {
  auto all = list_checkpoints(dir);
  if (all.empty()) return Unexpected("no checkpoint in " + dir.string());
  return read_checkpoint(all.back());
}

// The automatic batch size: the largest per-process batch whose real probe steps fit the memory
// budget (the GPU's free memory times memory_fraction, or cpu_memory_limit), times the processes.
Phase<std::int64_t> search_global_batch(const TrainConfig& config, const Dataset& train, torch::Device device,
                                        int world_size, const Reporter& report) {
  BatchSearchOptions search;
  search.max_batch = std::max(1, config.batch_size.max / world_size);
  search.granularity = 8;
  search.verify_probes = 3;  // on an H200 the main search alone landed at 0.95 of the budget's maximum
  if (device.is_cuda()) {
    auto info = cuda_memory_info(device.index());
    if (!info) return Unexpected(report.fail("auto_batch", "cannot read CUDA memory info"));
    search.budget_bytes = static_cast<std::int64_t>(static_cast<double>(info->first) * config.batch_size.memory_fraction);
  } else {
    if (!config.batch_size.cpu_memory_limit_bytes)
      return Unexpected(report.bad_config("config", "/batch_size", "batch_size \"auto\" on CPU needs cpu_memory_limit"));
    search.budget_bytes = *config.batch_size.cpu_memory_limit_bytes;
  }
  auto found = search_batch_size([&](int b) { return run_probe(config, train, device, b); }, search);
  if (!found) {
    nlohmann::json probes = nlohmann::json::array();
    for (const auto& p : found.error().probes) probes.push_back(to_json(p));
    report.events.emit("error", {{"stage", "auto_batch"}, {"message", found.error().message}, {"probes", probes}});
    return Unexpected(kExitFailure);
  }
  report.events.emit("auto_batch", {{"result", to_json(*found)}, {"device", device.str()}});
  return static_cast<std::int64_t>(found->batch) * world_size;
}

// The global batch size: the checkpoint's on resume (`resumed`), else the config's, else searched.
Phase<std::int64_t> choose_batch_size(std::int64_t resumed, const TrainConfig& config, const Dataset& train,
                                      torch::Device device, int world_size, const Reporter& report) {
  std::int64_t batch = resumed;
  if (batch == 0) {
    if (!config.batch_size.automatic) {
      batch = config.batch_size.value;
    } else {
      auto found = search_global_batch(config, train, device, world_size, report);
      if (!found) return found;
      batch = *found;
    }
  }
  if (batch % world_size != 0)
    return Unexpected(report.bad_config("config", "/batch_size", "batch_size must be a multiple of the number of processes"));
  return batch;
}

// How the data is cut into optimizer steps.
struct StepPlan {
  LoaderOptions loader;
  std::int64_t accum = 1;  // micro-batches per optimizer step
  std::int64_t steps_per_epoch = 0;
  std::int64_t total_steps = 0;
};

Phase<StepPlan> plan_steps(const TrainConfig& config, std::int64_t batch_size, const DistributedEnv& env,
                           torch::Device device, const Dataset& train, const Reporter& report) {
  StepPlan plan;
  LoaderOptions& lo = plan.loader;
  lo.global_batch = batch_size;
  lo.rank = env.rank;
  lo.world_size = env.world_size;
  lo.workers = config.data.workers;
  lo.prefetch = std::max(1, config.data.prefetch);
  lo.shuffle = config.data.shuffle;
  lo.seed = config.seed;
  lo.pin_memory = device.is_cuda();
  BatchLoader probe_count(train, lo);
  plan.accum = std::max(1, config.grad_accum_steps);
  plan.steps_per_epoch = probe_count.batches_per_epoch() / plan.accum;
  if (plan.steps_per_epoch == 0)
    return Unexpected(report.bad_config("config", "/batch_size",
                                             "dataset has fewer samples than one step needs (batch_size x grad_accum_steps)"));
  lo.batches_per_epoch_cap = plan.steps_per_epoch * plan.accum;
  plan.total_steps = config.max_steps ? *config.max_steps : *config.epochs * plan.steps_per_epoch;
  return plan;
}

// The loop over the epochs: optimizer steps, step records, evaluation, checkpoints and stop signals.
class TrainingLoop {
 public:
  TrainingLoop(const TrainConfig& config, const Reporter& report, bool rank0, LoopState state, Trainee& trainee,
               torch::Device device, ProcessGroupHandle* group, const DataSplit& data, const StepPlan& plan)
      : config_(config),
        events_(report.events),
        rank0_(rank0),
        state_(state),
        trainee_(trainee),
        device_(device),
        group_(group),
        data_(data),
        plan_(plan),
        loader_(data.train, plan.loader),
        ctx_(trainee.step_context(config, device, group)),
        ckpt_dir_(checkpoint_dir(config)),
        cuda_index_(device.is_cuda() ? device.index() : -1),
        loss_accum_(torch::zeros({}, torch::TensorOptions().device(device))),
        finish_reason_(config.max_steps ? "max_steps" : "epochs"),
        // GPU fields come from NVML when the driver library is there; CPU runs simply have none.
        nvml_(device.is_cuda() && rank0 ? Nvml::load() : std::nullopt),
        advisor_(AdviceContext{config.data.workers, config.data.source, device.is_cuda()}) {}

  void emit_start(bool resumed) {
    events_.emit("start", {{"resumed", resumed},
                           {"step", state_.step},
                           {"total_steps", plan_.total_steps},
                           {"steps_per_epoch", plan_.steps_per_epoch},
                           {"batch_size", state_.batch_size},
                           {"grad_accum_steps", plan_.accum},
                           {"device", device_.str()},
                           {"precision", precision_name(config_.precision)},
                           {"parameters", parameter_count(*trainee_.model)},
                           {"world_size", plan_.loader.world_size},
                           {"backend", group_ ? group_->backend() : "none"},
                           {"threads", at::get_num_threads()},
                           {"workers", config_.data.workers},
                           {"torch", torch_version_string()},
                           {"config", to_json(config_)}});
  }

  // Trains to max_steps or the last epoch, or until early stopping. A stop signal ends it sooner,
  // after a checkpoint: then it returns that signal's exit status.
  std::optional<int> train() {
    bool finished = state_.step >= plan_.total_steps;
    while (!finished) {
      if (config_.epochs && state_.epoch >= *config_.epochs) break;
      loader_.start_epoch(state_.epoch, state_.batch_in_epoch);
      std::int64_t micro = 0;
      double waited = 0;
      while (auto batch = loader_.next(&waited)) {
        window_wait_ += waited;
        accumulate(*batch);
        ++state_.batch_in_epoch;
        if (++micro % plan_.accum != 0) continue;

        optimizer_step();
        const bool stop_early = evaluate_if_due();
        if (config_.checkpoint.every_steps > 0 && state_.step % config_.checkpoint.every_steps == 0 &&
            state_.step < plan_.total_steps) {
          save("periodic");
        }
        if (const int sig = stop_requested(); sig != 0) return interrupted(sig);
        if (stop_early) {
          finish_reason_ = "early_stopping";
          finished = true;
          break;
        }
        if (state_.step >= plan_.total_steps) {
          finished = true;
          break;
        }
      }
      if (!finished && state_.batch_in_epoch == 0 && micro == 0) break;  // empty epoch: nothing to do
    }
    return std::nullopt;
  }

  // The last step record, the final checkpoint and the `done` event (returned for on_complete).
  Phase<nlohmann::json> finish(std::chrono::steady_clock::time_point started) {
    if (window_steps_ > 0)
      log_step(scheduled_lr(config_.optimizer, config_.schedule, std::max<std::int64_t>(0, state_.step - 1), plan_.total_steps));
    if (!save("final")) return Unexpected(kExitFailure);
    if (group_) group_->barrier();
    const auto hash = parameter_hash(*trainee_.model);
    nlohmann::json done = {{"step", state_.step},
                           {"epoch", state_.epoch},
                           {"reason", finish_reason_},
                           {"param_hash", hash},
                           {"elapsed_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()}};
    if (last_loss_) done["final_loss"] = *last_loss_;
    if (last_eval_) done["eval_loss"] = *last_eval_;
    if (trainee_.scaler) done["skipped_steps"] = skipped_steps_;
    events_.emit("done", done);
    events_.write_plot();
    return done;
  }

 private:
  // One micro-batch's forward and backward; the gradients add up until the optimizer step.
  void accumulate(const Batch& batch) {
    auto loss = forward_loss(ctx_, batch, device_.is_cuda());
    loss_accum_ += loss.detach().to(torch::kFloat) / static_cast<double>(plan_.accum);
    auto scaled = plan_.accum > 1 ? loss / static_cast<double>(plan_.accum) : loss;
    (trainee_.scaler ? trainee_.scaler->scale(scaled) : scaled).backward();
  }

  void optimizer_step() {
    const double lr = scheduled_lr(config_.optimizer, config_.schedule, state_.step, plan_.total_steps);
    set_lr(*trainee_.optimizer, lr);
    if (!apply_step(ctx_)) ++skipped_steps_;
    ++state_.step;
    ++window_steps_;
    window_samples_ += state_.batch_size * plan_.accum;
    if (state_.step % std::max<std::int64_t>(1, config_.log_every_steps) == 0 || state_.step == plan_.total_steps) {
      log_step(lr);
    }
    if (state_.batch_in_epoch >= loader_.batches_per_epoch()) {
      state_.batch_in_epoch = 0;
      ++state_.epoch;
    }
  }

  // Evaluates when eval.every_steps says so; true when early stopping's patience has run out.
  bool evaluate_if_due() {
    if (config_.eval.every_steps <= 0 || state_.step % config_.eval.every_steps != 0 || data_.eval.size() <= 0) return false;
    auto r = evaluate(ctx_, data_.eval, loader_.local_batch());
    last_eval_ = r.loss;
    nlohmann::json fields = {{"step", state_.step}, {"loss", r.loss}};
    if (r.accuracy) fields["accuracy"] = *r.accuracy;
    if (r.loss < state_.best_eval - config_.eval.min_delta) {
      state_.best_eval = r.loss;
      state_.evals_without_improvement = 0;
    } else {
      ++state_.evals_without_improvement;
    }
    fields["best_loss"] = state_.best_eval;
    events_.emit("eval", fields);
    return config_.eval.early_stopping_patience > 0 &&
           state_.evals_without_improvement >= config_.eval.early_stopping_patience;
  }

  // The step record of the window since the last one (loss, rate, data wait, GPU), and the advice it prompts.
  void log_step(double lr) {
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - window_start_).count();
    StepRecord rec;
    rec.step = state_.step;
    rec.epoch = state_.epoch;
    rec.loss = loss_accum_.item<double>() / static_cast<double>(std::max<std::int64_t>(1, window_steps_));
    rec.lr = lr;
    rec.samples_per_s = seconds > 0 ? static_cast<double>(window_samples_) / seconds : 0.0;
    rec.data_wait_fraction = seconds > 0 ? std::min(1.0, window_wait_ / seconds) : 0.0;
    rec.step_time_s = seconds / static_cast<double>(std::max<std::int64_t>(1, window_steps_));
    if (trainee_.scaler) {
      rec.loss_scale = trainee_.scaler->current_scale();
      rec.skipped_steps = skipped_steps_;
    }
    if (nvml_) {
      if (auto sample = nvml_->sample(device_.index())) rec.gpus.push_back(*sample);
    }
    last_loss_ = rec.loss;
    events_.emit(rec);
    AdviceSample sample;
    sample.time_s = std::chrono::duration<double>(now - monotonic_start_).count();
    sample.data_wait_fraction = rec.data_wait_fraction;
    if (!rec.gpus.empty()) sample.gpu_util_percent = rec.gpus.front().utilization_percent;
    if (auto advice = advisor_.observe(sample); advice && rank0_) events_.emit(*advice);
    loss_accum_.zero_();
    window_wait_ = 0;
    window_samples_ = 0;
    window_steps_ = 0;
    window_start_ = std::chrono::steady_clock::now();
  }

  // Rank 0 writes the checkpoint; false (with an error event) when it could not.
  bool save(const std::string& reason) {
    if (!rank0_) return true;
    CheckpointData ck;
    ck.meta["loop"] = loop_meta(state_);
    ck.meta["config"] = to_json(config_);
    if (trainee_.scaler)
      ck.meta["scaler"] = {{"scale", trainee_.scaler->current_scale()}, {"growth_tracker", trainee_.scaler->growth_tracker()}};
    add_model_state(ck, *trainee_.model);
    add_optimizer_state(ck, *trainee_.optimizer, *trainee_.model);
    add_rng_state(ck, cuda_index_);
    const auto path = checkpoint_path(ckpt_dir_, state_.step);
    if (auto r = write_checkpoint(path, ck); !r) {
      events_.emit("error", {{"stage", "checkpoint"}, {"message", r.error()}});
      return false;
    }
    prune_checkpoints(ckpt_dir_, config_.checkpoint.keep_last);
    events_.emit("checkpoint", {{"step", state_.step}, {"path", path.string()}, {"reason", reason}});
    return true;
  }

  // The stop signal any rank got, so that every rank stops at the same step.
  int stop_requested() {
    int sig = g_stop_signal.load();
    if (group_) {
      auto flag = torch::full({1}, static_cast<float>(sig), torch::TensorOptions().dtype(torch::kFloat).device(device_));
      group_->max_inplace(flag);
      sig = static_cast<int>(flag.item<float>());
    }
    return sig;
  }

  int interrupted(int sig) {
    save(sig == SIGINT ? "sigint" : "sigterm");
    events_.emit("interrupted", {{"step", state_.step}, {"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}});
    events_.write_plot();
    return sig == SIGINT ? kExitSigint : kExitSigterm;
  }

  const TrainConfig& config_;
  EventStream& events_;
  const bool rank0_;
  LoopState state_;
  Trainee& trainee_;
  const torch::Device device_;
  ProcessGroupHandle* const group_;
  const DataSplit& data_;
  const StepPlan& plan_;
  BatchLoader loader_;
  StepContext ctx_;
  const std::filesystem::path ckpt_dir_;
  const int cuda_index_;

  // The window since the last step record.
  double window_wait_ = 0;
  std::int64_t window_samples_ = 0, window_steps_ = 0;
  std::chrono::steady_clock::time_point window_start_ = std::chrono::steady_clock::now();
  torch::Tensor loss_accum_;

  std::int64_t skipped_steps_ = 0;
  std::optional<double> last_loss_, last_eval_;
  std::string finish_reason_;
  std::optional<Nvml> nvml_;
  DataStarvationAdvisor advisor_;
  const std::chrono::steady_clock::time_point monotonic_start_ = std::chrono::steady_clock::now();
};

// on_complete's command and webhook, on rank 0, with the `done` event. The model is saved either
// way; a distinct status lets callers (ferry train) still pull the outputs while scripts notice
// that the notification never went out.
int run_on_complete(const OnCompleteConfig& on_complete, const nlohmann::json& done, EventStream& events, bool rank0) {
  bool hook_failed = false;
  auto hook_error = [&](const std::string& message) {
    events.emit("error", {{"stage", "on_complete"}, {"message", message}});
    hook_failed = true;
  };
  if (rank0) {
    nlohmann::json done_event = done;
    done_event["event"] = "done";
    const auto done_json = done_event.dump();
    if (on_complete.command) {
      auto rc = run_shell_command(*on_complete.command, done_json);
      if (!rc) {
        hook_error(rc.error());
      } else if (*rc != 0) {
        hook_error("on_complete command exited with " + std::to_string(*rc));
      }
    }
    if (on_complete.webhook_env) {
      const char* url_text = std::getenv(on_complete.webhook_env->c_str());
      if (!url_text || !*url_text) {
        hook_error("webhook: environment variable " + *on_complete.webhook_env + " is not set");
      } else if (auto url = parse_http_url(url_text); !url) {
        hook_error(url.error());
      } else if (auto status = http_post_json(*url, done_json, std::chrono::seconds(10)); !status) {
        hook_error(status.error());
      } else if (*status >= 300) {
        hook_error("webhook " + url->redacted() + " answered HTTP " + std::to_string(*status));
      }
    }
  }
  return hook_failed ? kExitOnCompleteFailed : kExitOk;
}

// The run once the distributed environment is known: device, process group, data, resume point,
// batch size, model, the loop, on_complete. Returns the exit status.
int train_with(const TrainConfig& config, const RunOptions& options, const DistributedEnv& env, const Reporter& report,
               std::chrono::steady_clock::time_point started) {
  auto device = choose_device(config, env.local_rank, report);
  if (!device) return device.error();
  if (config.threads > 0) set_compute_threads(config.threads);

  std::unique_ptr<ProcessGroupHandle> group;
  if (env.world_size > 1) {
    auto connected = ProcessGroupHandle::connect(env, device->is_cuda());
    if (!connected) return report.fail("distributed", connected.error());
    group = std::move(*connected);
  }

  auto data = load_data(config);
  if (!data) return report.bad_config("data", "/data", data.error());

  LoopState state;
  std::optional<CheckpointData> resume_from;
  if (options.resume) {
    auto loaded = latest_checkpoint(checkpoint_dir(config));
    if (!loaded) return report.fail("resume", loaded.error());
    resume_from = std::move(*loaded);
    state = loop_state_from(resume_from->meta.at("loop"));
  }
  auto batch = choose_batch_size(state.batch_size, config, data->train, *device, env.world_size, report);
  if (!batch) return batch.error();
  state.batch_size = *batch;

  torch::manual_seed(config.seed);
  Trainee trainee(config, *device);
  if (resume_from) {
    if (auto r = trainee.restore(*resume_from, device->is_cuda() ? device->index() : -1); !r) return report.fail("resume", r.error());
  }
  auto plan = plan_steps(config, state.batch_size, env, *device, data->train, report);
  if (!plan) return plan.error();

  const bool rank0 = env.rank == 0;
  TrainingLoop loop(config, report, rank0, state, trainee, *device, group.get(), *data, *plan);
  loop.emit_start(options.resume);
  if (auto stopped = loop.train()) return *stopped;
  auto done = loop.finish(started);
  if (!done) return done.error();
  return run_on_complete(config.on_complete, *done, report.events, rank0);
}

}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

std::string build_description() {
  return "LibTorch " + torch_version_string() + ", CUDA: " + (built_with_cuda() ? "yes" : "no") +
         ", distributed: " + (distributed_available() ? "c10d " + distributed_backends() : "none");
}

double scheduled_lr(const OptimizerConfig& optimizer, const ScheduleConfig& schedule, std::int64_t step,
                    std::int64_t total_steps) {
  const double base = optimizer.lr;
  if (schedule.warmup_steps > 0 && step < schedule.warmup_steps) {
    return base * static_cast<double>(step + 1) / static_cast<double>(schedule.warmup_steps);
  }
  switch (schedule.kind) {
    case ScheduleKind::constant: return base;
    case ScheduleKind::step: {
      const auto after = step - schedule.warmup_steps;
      return base * std::pow(schedule.gamma, static_cast<double>(after / std::max<std::int64_t>(1, schedule.step_size)));
    }
    case ScheduleKind::cosine: {
      const auto span = std::max<std::int64_t>(1, total_steps - schedule.warmup_steps);
      const double progress = std::clamp(static_cast<double>(step - schedule.warmup_steps) / static_cast<double>(span), 0.0, 1.0);
      return schedule.min_lr + 0.5 * (base - schedule.min_lr) * (1.0 + std::cos(kPi * progress));
    }
  }
  return base;
}

int run_training(TrainConfig config, const RunOptions& options, EventStream& events) {
  const auto started = std::chrono::steady_clock::now();
  apply_overrides(config, options);
  auto env = distributed_env_from_environment();
  if (!env) {
    events.emit("error", {{"stage", "distributed"}, {"message", env.error()}});
    return kExitBadConfig;
  }
  events.set_stdout(env->rank == 0);
  if (env->rank == 0) events.open_output(config.output_dir, options.resume);
  const Reporter report{events, env->rank};
  try {
    return train_with(config, options, *env, report, started);
  } catch (const std::exception& e) {
    return report.fail("train", e.what());
  }
}

}  // namespace ferry::train
