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
#include <fstream>
#include <iostream>
#include <numbers>

#include <torch/torch.h>

#include "remote-runtime/train/batch_loader.hpp"
#include "remote-runtime/train/batch_size_search.hpp"
#include "remote-runtime/train/checkpoint.hpp"
#include "remote-runtime/train/dataset.hpp"
#include "remote-runtime/train/advice.hpp"
#include "remote-runtime/train/distributed.hpp"
#include "remote-runtime/train/loss_scaler.hpp"
#include "remote-runtime/train/models.hpp"
#include "remote-runtime/train/nvml.hpp"
#include "remote-runtime/train/on_complete.hpp"
#include "remote-runtime/train/torch_compat.hpp"

namespace ferry::train {
namespace {

std::atomic<int> g_stop_signal{0};

extern "C" void on_stop_signal(int sig) { g_stop_signal.store(sig); }

struct RunError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "auto" and "cuda" pick the GPU of this process's LOCAL_RANK, so --nproc N on an N-GPU host spreads out.
std::expected<torch::Device, std::string> resolve_device(const std::string& name, int local_rank) {
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (name == "auto" && !cuda_available()) return torch::Device(torch::kCPU);
  if (name == "auto" || name == "cuda" || name.starts_with("cuda:")) {
    int index = cuda_available() ? local_rank % std::max(1, cuda_device_count()) : 0;
    if (name.size() > 5) {
      char* end = nullptr;
      const long n = std::strtol(name.c_str() + 5, &end, 10);
      if (*end != '\0' || n < 0) return std::unexpected("bad device '" + name + "'");
      index = static_cast<int>(n);
    }
    if (!cuda_available()) {
      return std::unexpected("device " + name + " requested but " +
                             (built_with_cuda() ? "no CUDA device is visible" : "this LibTorch has no CUDA support"));
    }
    if (index >= cuda_device_count()) return std::unexpected("device " + name + " does not exist");
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  return std::unexpected("bad device '" + name + "' (auto, cpu, cuda or cuda:N)");
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
    if (line.starts_with(prefix)) return std::atoll(line.c_str() + prefix.size());
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

Batch probe_batch(const Dataset& data, int batch, bool pin) {
  auto rows = torch::arange(batch, torch::kLong).remainder(data.size());
  return gather_batch(data, rows, pin);
}

ProbeOutcome run_probe(const TrainConfig& config, const Dataset& data, torch::Device device, int batch) {
  try {
    auto model = make_model(config.model);
    model->to(device);
    model->train();
    auto params = model->parameters();
    auto optimizer = make_optimizer(config.optimizer, params);
    std::optional<LossScaler> scaler;
    if (config.precision == Precision::fp16) scaler.emplace(LossScaler::Options{}, device);
    StepContext ctx{*model, *optimizer, device, config.data.task, config.precision, scaler ? &*scaler : nullptr,
                    nullptr, config.grad_clip_norm, params};
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
      return schedule.min_lr + 0.5 * (base - schedule.min_lr) * (1.0 + std::cos(std::numbers::pi * progress));
    }
  }
  return base;
}

int run_training(TrainConfig config, const RunOptions& options, EventStream& events) {
  const auto started = std::chrono::steady_clock::now();
  if (options.output_dir) config.output_dir = *options.output_dir;
  if (options.device) config.device = *options.device;
  if (options.max_steps) {
    config.max_steps = *options.max_steps;
    config.epochs.reset();
  }
  auto env = distributed_env_from_environment();
  if (!env) {
    events.emit("error", {{"stage", "distributed"}, {"message", env.error()}});
    return kExitBadConfig;
  }
  const bool rank0 = env->rank == 0;
  events.set_stdout(rank0);
  if (rank0) events.open_output(config.output_dir, options.resume);

  auto fail = [&](const std::string& stage, const std::string& message) {
    events.emit("error", {{"stage", stage}, {"message", message}, {"rank", env->rank}});
    return kExitFailure;
  };

  try {
    auto device = resolve_device(config.device, env->local_rank);
    if (!device) {
      events.emit("error", {{"stage", "device"}, {"pointer", "/device"}, {"message", device.error()}});
      return kExitBadConfig;
    }
    if (config.precision == Precision::fp16 && !device->is_cuda()) {
      events.emit("error", {{"stage", "config"}, {"pointer", "/precision"},
                            {"message", "fp16 needs a CUDA device; use bf16 on CPU"}});
      return kExitBadConfig;
    }
    if (config.threads > 0) set_compute_threads(config.threads);

    std::unique_ptr<ProcessGroupHandle> group;
    if (env->world_size > 1) {
      auto connected = ProcessGroupHandle::connect(*env, device->is_cuda());
      if (!connected) return fail("distributed", connected.error());
      group = std::move(*connected);
    }

    auto data = load_data(config);
    if (!data) {
      events.emit("error", {{"stage", "data"}, {"pointer", "/data"}, {"message", data.error()}});
      return kExitBadConfig;
    }

    LoopState state;
    std::optional<CheckpointData> resume_from;
    const auto ckpt_dir = checkpoint_dir(config);
    if (options.resume) {
      auto all = list_checkpoints(ckpt_dir);
      if (all.empty()) return fail("resume", "no checkpoint in " + ckpt_dir.string());
      auto loaded = read_checkpoint(all.back());
      if (!loaded) return fail("resume", loaded.error());
      resume_from = std::move(*loaded);
      const auto& loop = resume_from->meta.at("loop");
      state.step = loop.at("step").get<std::int64_t>();
      state.epoch = loop.at("epoch").get<std::int64_t>();
      state.batch_in_epoch = loop.at("batch_in_epoch").get<std::int64_t>();
      if (!loop.at("best_eval").is_null()) state.best_eval = loop.at("best_eval").get<double>();
      state.evals_without_improvement = loop.at("evals_without_improvement").get<int>();
      state.batch_size = loop.at("batch_size").get<std::int64_t>();
    }

    // Batch size: fixed, from the checkpoint on resume, or searched with real probes.
    if (state.batch_size == 0) {
      if (!config.batch_size.automatic) {
        state.batch_size = config.batch_size.value;
      } else {
        BatchSearchOptions search;
        search.max_batch = std::max(1, config.batch_size.max / env->world_size);
        search.granularity = 8;
        search.verify_probes = 3;  // on an H200 the main search alone landed at 0.95 of the budget's maximum
        if (device->is_cuda()) {
          auto info = cuda_memory_info(device->index());
          if (!info) return fail("auto_batch", "cannot read CUDA memory info");
          search.budget_bytes = static_cast<std::int64_t>(static_cast<double>(info->first) * config.batch_size.memory_fraction);
        } else {
          if (!config.batch_size.cpu_memory_limit_bytes) {
            events.emit("error", {{"stage", "config"}, {"pointer", "/batch_size"},
                                  {"message", "batch_size \"auto\" on CPU needs cpu_memory_limit"}});
            return kExitBadConfig;
          }
          search.budget_bytes = *config.batch_size.cpu_memory_limit_bytes;
        }
        auto found = search_batch_size(
            [&](int b) { return run_probe(config, data->train, *device, b); }, search);
        if (!found) {
          nlohmann::json probes = nlohmann::json::array();
          for (const auto& p : found.error().probes) probes.push_back(to_json(p));
          events.emit("error", {{"stage", "auto_batch"}, {"message", found.error().message}, {"probes", probes}});
          return kExitFailure;
        }
        events.emit("auto_batch", {{"result", to_json(*found)}, {"device", device->str()}});
        state.batch_size = static_cast<std::int64_t>(found->batch) * env->world_size;
      }
    }
    if (state.batch_size % env->world_size != 0) {
      events.emit("error", {{"stage", "config"}, {"pointer", "/batch_size"},
                            {"message", "batch_size must be a multiple of the number of processes"}});
      return kExitBadConfig;
    }

    torch::manual_seed(config.seed);
    auto model = make_model(config.model);
    model->to(*device);
    model->train();
    auto params = model->parameters();
    auto optimizer = make_optimizer(config.optimizer, params);
    std::optional<LossScaler> scaler;
    if (config.precision == Precision::fp16) scaler.emplace(LossScaler::Options{}, *device);
    const int cuda_index = device->is_cuda() ? device->index() : -1;

    if (resume_from) {
      if (auto r = load_model_state(*resume_from, *model); !r) return fail("resume", r.error());
      if (auto r = load_optimizer_state(*resume_from, *optimizer, *model); !r) return fail("resume", r.error());
      if (auto r = load_rng_state(*resume_from, cuda_index); !r) return fail("resume", r.error());
      if (scaler && resume_from->meta.contains("scaler")) {
        scaler->restore(resume_from->meta["scaler"].at("scale").get<double>(),
                        resume_from->meta["scaler"].at("growth_tracker").get<std::int64_t>());
      }
    }

    LoaderOptions lo;
    lo.global_batch = state.batch_size;
    lo.rank = env->rank;
    lo.world_size = env->world_size;
    lo.workers = config.data.workers;
    lo.prefetch = std::max(1, config.data.prefetch);
    lo.shuffle = config.data.shuffle;
    lo.seed = config.seed;
    lo.pin_memory = device->is_cuda();
    BatchLoader probe_count(data->train, lo);
    const std::int64_t accum = std::max(1, config.grad_accum_steps);
    const std::int64_t steps_per_epoch = probe_count.batches_per_epoch() / accum;
    if (steps_per_epoch == 0) {
      events.emit("error", {{"stage", "config"}, {"pointer", "/batch_size"},
                            {"message", "dataset has fewer samples than one step needs (batch_size x grad_accum_steps)"}});
      return kExitBadConfig;
    }
    lo.batches_per_epoch_cap = steps_per_epoch * accum;
    BatchLoader loader(data->train, lo);
    const std::int64_t total_steps = config.max_steps ? *config.max_steps : *config.epochs * steps_per_epoch;

    StepContext ctx{*model, *optimizer, *device, config.data.task, config.precision, scaler ? &*scaler : nullptr,
                    group.get(), config.grad_clip_norm, params};

    events.emit("start", {{"resumed", options.resume},
                          {"step", state.step},
                          {"total_steps", total_steps},
                          {"steps_per_epoch", steps_per_epoch},
                          {"batch_size", state.batch_size},
                          {"grad_accum_steps", accum},
                          {"device", device->str()},
                          {"precision", precision_name(config.precision)},
                          {"parameters", parameter_count(*model)},
                          {"world_size", env->world_size},
                          {"backend", group ? group->backend() : "none"},
                          {"threads", at::get_num_threads()},
                          {"workers", config.data.workers},
                          {"torch", torch_version_string()},
                          {"config", to_json(config)}});

    auto save = [&](const std::string& reason) -> bool {
      if (!rank0) return true;
      CheckpointData ck;
      ck.meta["loop"] = loop_meta(state);
      ck.meta["config"] = to_json(config);
      if (scaler) ck.meta["scaler"] = {{"scale", scaler->current_scale()}, {"growth_tracker", scaler->growth_tracker()}};
      add_model_state(ck, *model);
      add_optimizer_state(ck, *optimizer, *model);
      add_rng_state(ck, cuda_index);
      const auto path = checkpoint_path(ckpt_dir, state.step);
      if (auto r = write_checkpoint(path, ck); !r) {
        events.emit("error", {{"stage", "checkpoint"}, {"message", r.error()}});
        return false;
      }
      prune_checkpoints(ckpt_dir, config.checkpoint.keep_last);
      events.emit("checkpoint", {{"step", state.step}, {"path", path.string()}, {"reason", reason}});
      return true;
    };

    auto stop_requested = [&]() -> int {
      int sig = g_stop_signal.load();
      if (group) {
        auto flag = torch::full({1}, static_cast<float>(sig), torch::TensorOptions().dtype(torch::kFloat).device(*device));
        group->max_inplace(flag);
        sig = static_cast<int>(flag.item<float>());
      }
      return sig;
    };

    const bool non_blocking = device->is_cuda();
    double window_wait = 0;
    std::int64_t window_samples = 0, window_steps = 0, skipped_steps = 0;
    auto window_start = std::chrono::steady_clock::now();
    torch::Tensor loss_accum = torch::zeros({}, torch::TensorOptions().device(*device));
    std::optional<double> last_loss, last_eval;
    std::string finish_reason = config.max_steps ? "max_steps" : "epochs";
    bool finished = state.step >= total_steps;

    // GPU fields come from NVML when the driver library is there; CPU runs simply have none.
    std::optional<Nvml> nvml = device->is_cuda() && rank0 ? Nvml::load() : std::nullopt;
    DataStarvationAdvisor advisor(AdviceContext{config.data.workers, config.data.source, device->is_cuda()});
    const auto monotonic_start = std::chrono::steady_clock::now();
    auto log_step = [&](double lr) {
      const auto now = std::chrono::steady_clock::now();
      const double seconds = std::chrono::duration<double>(now - window_start).count();
      StepRecord rec;
      rec.step = state.step;
      rec.epoch = state.epoch;
      rec.loss = loss_accum.item<double>() / static_cast<double>(std::max<std::int64_t>(1, window_steps));
      rec.lr = lr;
      rec.samples_per_s = seconds > 0 ? static_cast<double>(window_samples) / seconds : 0.0;
      rec.data_wait_fraction = seconds > 0 ? std::min(1.0, window_wait / seconds) : 0.0;
      rec.step_time_s = seconds / static_cast<double>(std::max<std::int64_t>(1, window_steps));
      if (scaler) {
        rec.loss_scale = scaler->current_scale();
        rec.skipped_steps = skipped_steps;
      }
      if (nvml) {
        if (auto sample = nvml->sample(device->index())) rec.gpus.push_back(*sample);
      }
      last_loss = rec.loss;
      events.emit(rec);
      AdviceSample sample;
      sample.time_s = std::chrono::duration<double>(now - monotonic_start).count();
      sample.data_wait_fraction = rec.data_wait_fraction;
      if (!rec.gpus.empty()) sample.gpu_util_percent = rec.gpus.front().utilization_percent;
      if (auto advice = advisor.observe(sample); advice && rank0) events.emit(*advice);
      loss_accum.zero_();
      window_wait = 0;
      window_samples = 0;
      window_steps = 0;
      window_start = std::chrono::steady_clock::now();
    };

    while (!finished) {
      if (config.epochs && state.epoch >= *config.epochs) break;
      loader.start_epoch(state.epoch, state.batch_in_epoch);
      std::int64_t micro = 0;
      double waited = 0;
      while (auto batch = loader.next(&waited)) {
        window_wait += waited;
        auto loss = forward_loss(ctx, *batch, non_blocking);
        loss_accum += loss.detach().to(torch::kFloat) / static_cast<double>(accum);
        auto scaled = accum > 1 ? loss / static_cast<double>(accum) : loss;
        (scaler ? scaler->scale(scaled) : scaled).backward();
        ++state.batch_in_epoch;
        if (++micro % accum != 0) continue;

        const double lr = scheduled_lr(config.optimizer, config.schedule, state.step, total_steps);
        set_lr(*optimizer, lr);
        if (!apply_step(ctx)) ++skipped_steps;
        ++state.step;
        ++window_steps;
        window_samples += state.batch_size * accum;
        if (state.step % std::max<std::int64_t>(1, config.log_every_steps) == 0 || state.step == total_steps) {
          log_step(lr);
        }
        if (state.batch_in_epoch >= loader.batches_per_epoch()) {
          state.batch_in_epoch = 0;
          ++state.epoch;
        }

        bool stop_early = false;
        if (config.eval.every_steps > 0 && state.step % config.eval.every_steps == 0 && data->eval.size() > 0) {
          auto r = evaluate(ctx, data->eval, loader.local_batch());
          last_eval = r.loss;
          nlohmann::json fields = {{"step", state.step}, {"loss", r.loss}};
          if (r.accuracy) fields["accuracy"] = *r.accuracy;
          if (r.loss < state.best_eval - config.eval.min_delta) {
            state.best_eval = r.loss;
            state.evals_without_improvement = 0;
          } else {
            ++state.evals_without_improvement;
          }
          fields["best_loss"] = state.best_eval;
          events.emit("eval", fields);
          if (config.eval.early_stopping_patience > 0 &&
              state.evals_without_improvement >= config.eval.early_stopping_patience) {
            stop_early = true;
          }
        }
        if (config.checkpoint.every_steps > 0 && state.step % config.checkpoint.every_steps == 0 &&
            state.step < total_steps) {
          save("periodic");
        }
        if (const int sig = stop_requested(); sig != 0) {
          save(sig == SIGINT ? "sigint" : "sigterm");
          events.emit("interrupted", {{"step", state.step}, {"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}});
          events.write_plot();
          return sig == SIGINT ? kExitSigint : kExitSigterm;
        }
        if (stop_early) {
          finish_reason = "early_stopping";
          finished = true;
          break;
        }
        if (state.step >= total_steps) {
          finished = true;
          break;
        }
      }
      if (!finished && state.batch_in_epoch == 0 && micro == 0) break;  // empty epoch: nothing to do
    }

    if (window_steps > 0) log_step(scheduled_lr(config.optimizer, config.schedule, std::max<std::int64_t>(0, state.step - 1), total_steps));
    if (!save("final")) return kExitFailure;
    if (group) group->barrier();
    const auto hash = parameter_hash(*model);
    nlohmann::json done = {{"step", state.step},
                           {"epoch", state.epoch},
                           {"reason", finish_reason},
                           {"param_hash", hash},
                           {"elapsed_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()}};
    if (last_loss) done["final_loss"] = *last_loss;
    if (last_eval) done["eval_loss"] = *last_eval;
    if (scaler) done["skipped_steps"] = skipped_steps;
    events.emit("done", done);
    events.write_plot();

    // The model is saved either way; a distinct status lets callers (ferry train) still pull the outputs
    // while scripts notice that the notification never went out.
    bool hook_failed = false;
    auto hook_error = [&](const std::string& message) {
      events.emit("error", {{"stage", "on_complete"}, {"message", message}});
      hook_failed = true;
    };
    if (rank0) {
      nlohmann::json done_event = done;
      done_event["event"] = "done";
      const auto done_json = done_event.dump();
      if (config.on_complete.command) {
        auto rc = run_shell_command(*config.on_complete.command, done_json);
        if (!rc) {
          hook_error(rc.error());
        } else if (*rc != 0) {
          hook_error("on_complete command exited with " + std::to_string(*rc));
        }
      }
      if (config.on_complete.webhook_env) {
        const char* url_text = std::getenv(config.on_complete.webhook_env->c_str());
        if (!url_text || !*url_text) {
          hook_error("webhook: environment variable " + *config.on_complete.webhook_env + " is not set");
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
  } catch (const std::exception& e) {
    return fail("train", e.what());
  }
}

}  // namespace ferry::train
