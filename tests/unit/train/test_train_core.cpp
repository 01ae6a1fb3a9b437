// In-process tests of ferry-train's torch core: every model learns, bf16 autocast trains, the loss
// scaler skips and backs off on overflow, checkpoints round-trip, the loader is worker-count independent.
#define BOOST_TEST_MODULE train_core
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>

#include <torch/torch.h>

#include "remote-runtime/train/batch_loader.hpp"
#include "remote-runtime/train/checkpoint.hpp"
#include "remote-runtime/train/dataset.hpp"
#include "remote-runtime/train/loss_scaler.hpp"
#include "remote-runtime/train/models.hpp"
#include "remote-runtime/train/torch_compat.hpp"
#include "remote-runtime/train/trainer.hpp"

using namespace ferry::train;

namespace {

struct ThreadSetup {
  ThreadSetup() { at::set_num_threads(1); }
};
BOOST_GLOBAL_FIXTURE(ThreadSetup);

TrainConfig small_config(ModelKind kind) {
  TrainConfig c;
  c.model.kind = kind;
  c.data.samples = 512;
  c.data.workers = 0;
  switch (kind) {
    case ModelKind::mlp:
      c.model.input_dim = 32;
      c.model.hidden = {64};
      c.model.output_dim = 4;
      break;
    case ModelKind::cnn:
      c.model.in_channels = 1;
      c.model.image_size = 8;
      c.model.width = 8;
      c.model.blocks = 1;
      c.model.output_dim = 4;
      break;
    case ModelKind::transformer:
      c.data.task = Task::language_model;
      c.model.vocab_size = 16;
      c.model.context = 16;
      c.model.d_model = 32;
      c.model.layers = 1;
      c.model.heads = 2;
      break;
  }
  return c;
}

// Trains `steps` Adam steps on the synthetic data and returns (first loss, last loss).
std::pair<double, double> train_steps(const TrainConfig& c, int steps, Precision precision) {
  torch::manual_seed(7);
  auto data = load_data(c);
  BOOST_REQUIRE(data.has_value());
  auto model = make_model(c.model);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(3e-3));
  LoaderOptions lo;
  lo.global_batch = 32;
  BatchLoader loader(data->train, lo);
  double first = 0, last = 0;
  std::int64_t epoch = 0;
  for (int step = 0; step < steps;) {
    loader.start_epoch(epoch++, 0);
    while (auto batch = loader.next()) {
      torch::Tensor loss;
      {
        AutocastGuard guard(c10::DeviceType::CPU, torch::kBFloat16, precision == Precision::bf16);
        auto out = model->forward(batch->input);
        if (precision == Precision::bf16) BOOST_CHECK(autocast_enabled(c10::DeviceType::CPU));
        loss = compute_loss(c.data.task, out, batch->target);
      }
      BOOST_CHECK(!autocast_enabled(c10::DeviceType::CPU));
      opt.zero_grad();
      loss.backward();
      opt.step();
      const double v = loss.item<double>();
      if (step == 0) first = v;
      last = v;
      if (++step == steps) break;
    }
  }
  return {first, last};
}

}  // namespace

BOOST_AUTO_TEST_CASE(mlp_loss_falls) {
  auto [first, last] = train_steps(small_config(ModelKind::mlp), 40, Precision::fp32);
  BOOST_TEST(last < 0.5 * first, "first " << first << " last " << last);
}

BOOST_AUTO_TEST_CASE(cnn_loss_falls) {
  auto [first, last] = train_steps(small_config(ModelKind::cnn), 60, Precision::fp32);
  BOOST_TEST(last < 0.6 * first, "first " << first << " last " << last);
}

BOOST_AUTO_TEST_CASE(transformer_loss_falls) {
  auto [first, last] = train_steps(small_config(ModelKind::transformer), 40, Precision::fp32);
  BOOST_TEST(last < 0.8 * first, "first " << first << " last " << last);
}

BOOST_AUTO_TEST_CASE(regression_loss_falls) {
  auto c = small_config(ModelKind::mlp);
  c.data.task = Task::regression;
  auto [first, last] = train_steps(c, 40, Precision::fp32);
  BOOST_TEST(last < 0.5 * first, "first " << first << " last " << last);
}

BOOST_AUTO_TEST_CASE(bf16_autocast_trains_and_computes_in_bf16) {
  auto c = small_config(ModelKind::mlp);
  auto model = make_model(c.model);
  auto x = torch::randn({4, 32});
  {
    AutocastGuard guard(c10::DeviceType::CPU, torch::kBFloat16, true);
    BOOST_TEST(model->forward(x).scalar_type() == torch::kBFloat16);
  }
  BOOST_TEST(model->forward(x).scalar_type() == torch::kFloat);
  auto [first, last] = train_steps(c, 40, Precision::bf16);
  BOOST_TEST(last < 0.5 * first, "first " << first << " last " << last);
}

BOOST_AUTO_TEST_CASE(loss_scaler_skips_backs_off_and_grows) {
  for (auto path : {LossScaler::Path::kAten, LossScaler::Path::kPlain}) {
    LossScaler::Options o;
    o.init_scale = 1024;
    o.growth_interval = 3;
    o.path = path;
    LossScaler scaler(o, torch::Device(torch::kCPU));
    auto g1 = torch::full({4}, 2048.0f);
    auto g2 = torch::full({3}, 1024.0f);
    g2[1] = std::numeric_limits<float>::infinity();
    BOOST_TEST(scaler.unscale({g1, g2}));  // overflow: the step must be skipped
    scaler.update();
    BOOST_TEST(scaler.current_scale() == 512.0);
    BOOST_TEST(scaler.growth_tracker() == 0);
    auto g3 = torch::full({2}, 512.0f);
    g3[0] = std::numeric_limits<float>::quiet_NaN();
    BOOST_TEST(scaler.unscale({g3}));
    scaler.update();
    BOOST_TEST(scaler.current_scale() == 256.0);
    for (int i = 0; i < 3; ++i) {
      auto g = torch::full({4}, 256.0f);
      BOOST_TEST(!scaler.unscale({g}));
      BOOST_TEST(torch::allclose(g, torch::ones({4})));  // unscaled in place
      scaler.update();
      BOOST_TEST(scaler.current_scale() == (i < 2 ? 256.0 : 512.0));
    }
    BOOST_TEST(scaler.growth_tracker() == 0);
  }
}

BOOST_AUTO_TEST_CASE(loss_scaler_paths_agree_where_both_exist) {
  // On LibTorch 1.13 CPU the ATen amp kernels are CUDA-only: the kAten scaler must notice and fall back.
  LossScaler::Options o;
  o.init_scale = 8;
  LossScaler aten(o, torch::Device(torch::kCPU));
  o.path = LossScaler::Path::kPlain;
  LossScaler plain(o, torch::Device(torch::kCPU));
  auto a = torch::randn({16}) * 8;
  auto b = a.clone();
  // An undefined grad (a parameter outside the loss) is skipped by both paths.
  BOOST_TEST(aten.unscale({a, torch::Tensor()}) == plain.unscale({b, torch::Tensor()}));
  BOOST_TEST(torch::equal(a, b));
  aten.update();
  plain.update();
  BOOST_TEST(aten.current_scale() == plain.current_scale());
  BOOST_TEST_MESSAGE("aten amp kernels used on CPU: " << aten.used_aten());
}

BOOST_AUTO_TEST_CASE(checkpoint_round_trip_restores_model_optimizer_and_rng) {
  const auto dir = std::filesystem::temp_directory_path() / ("ferry-ckpt-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto c = small_config(ModelKind::cnn);  // has BatchNorm buffers
  torch::manual_seed(3);
  auto model = make_model(c.model);
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3));
  auto x = torch::randn({8, 1, 8, 8});
  auto y = torch::randint(0, 4, {8}, torch::kLong);
  for (int i = 0; i < 3; ++i) {
    opt.zero_grad();
    compute_loss(Task::classification, model->forward(x), y).backward();
    opt.step();
  }
  opt.param_groups()[0].options().set_lr(0.0123);
  CheckpointData ck;
  ck.meta["note"] = "hello";
  add_model_state(ck, *model);
  add_optimizer_state(ck, opt, *model);
  add_rng_state(ck, -1);
  const auto path = checkpoint_path(dir, 3);
  BOOST_REQUIRE(write_checkpoint(path, ck).has_value());
  const auto expected_next = torch::randn({5});  // drawn after the RNG was saved

  auto loaded = read_checkpoint(path);
  BOOST_REQUIRE(loaded.has_value());
  BOOST_TEST(loaded->meta["note"] == "hello");
  torch::manual_seed(99);
  auto model2 = make_model(c.model);
  torch::optim::AdamW opt2(model2->parameters(), torch::optim::AdamWOptions(1e-3));
  BOOST_REQUIRE(load_model_state(*loaded, *model2).has_value());
  BOOST_REQUIRE(load_optimizer_state(*loaded, opt2, *model2).has_value());
  BOOST_REQUIRE(load_rng_state(*loaded, -1).has_value());
  BOOST_TEST(torch::equal(torch::randn({5}), expected_next));
  BOOST_TEST(opt2.param_groups()[0].options().get_lr() == 0.0123);
  BOOST_TEST(parameter_hash(*model) == parameter_hash(*model2));
  for (const auto& b : model->named_buffers()) BOOST_TEST(torch::equal(b.value(), model2->named_buffers()[b.key()]));
  // One more identical step on both must keep them identical (optimizer moments and step count restored).
  for (auto* pair : {&opt, &opt2}) pair->param_groups()[0].options().set_lr(1e-3);
  for (auto [m, o] : {std::pair{model.get(), &opt}, std::pair{model2.get(), &opt2}}) {
    o->zero_grad();
    compute_loss(Task::classification, m->forward(x), y).backward();
    o->step();
  }
  BOOST_TEST(parameter_hash(*model) == parameter_hash(*model2));

  // Corruption is reported, not crashed on.
  {
    std::ofstream bad(dir / "ckpt-0000000009.ferry", std::ios::binary);
    bad << "FERRYCKPT\n" << std::string(8, '\xff');
  }
  BOOST_TEST(!read_checkpoint(dir / "ckpt-0000000009.ferry").has_value());
  BOOST_TEST(list_checkpoints(dir).size() == 2u);
  prune_checkpoints(dir, 1);
  BOOST_TEST(list_checkpoints(dir).size() == 1u);
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(loader_is_independent_of_worker_count_and_shards_disjointly) {
  auto c = small_config(ModelKind::mlp);
  auto data = load_data(c);
  BOOST_REQUIRE(data.has_value());
  auto collect = [&](int workers, int rank, int world) {
    LoaderOptions lo;
    lo.global_batch = 32;
    lo.workers = workers;
    lo.prefetch = 2;
    lo.rank = rank;
    lo.world_size = world;
    lo.seed = 11;
    BatchLoader loader(data->train, lo);
    std::vector<torch::Tensor> out;
    loader.start_epoch(1, 2);
    while (auto b = loader.next()) out.push_back(b->input);
    return out;
  };
  auto serial = collect(0, 0, 1);
  auto threaded = collect(3, 0, 1);
  BOOST_REQUIRE_EQUAL(serial.size(), threaded.size());
  for (std::size_t i = 0; i < serial.size(); ++i) BOOST_TEST(torch::equal(serial[i], threaded[i]));
  auto r0 = collect(2, 0, 2), r1 = collect(0, 1, 2);
  BOOST_REQUIRE_EQUAL(r0.size(), serial.size());
  for (std::size_t i = 0; i < serial.size(); ++i) BOOST_TEST(torch::equal(torch::cat({r0[i], r1[i]}), serial[i]));
  BOOST_TEST(epoch_order(100, 5, 0, true) != epoch_order(100, 5, 1, true));
  BOOST_TEST(epoch_order(100, 5, 1, true) == epoch_order(100, 5, 1, true));
}

BOOST_AUTO_TEST_CASE(schedules_follow_the_step) {
  OptimizerConfig o;
  o.lr = 1.0;
  ScheduleConfig s;
  s.kind = ScheduleKind::cosine;
  s.warmup_steps = 10;
  s.min_lr = 0.1;
  BOOST_TEST(scheduled_lr(o, s, 0, 110) == 0.1, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(scheduled_lr(o, s, 9, 110) == 1.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(scheduled_lr(o, s, 60, 110) == 0.55, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(scheduled_lr(o, s, 110, 110) == 0.1, boost::test_tools::tolerance(1e-12));
  s.kind = ScheduleKind::step;
  s.warmup_steps = 0;
  s.step_size = 5;
  s.gamma = 0.5;
  BOOST_TEST(scheduled_lr(o, s, 4, 100) == 1.0);
  BOOST_TEST(scheduled_lr(o, s, 5, 100) == 0.5);
  BOOST_TEST(scheduled_lr(o, s, 12, 100) == 0.25);
}
