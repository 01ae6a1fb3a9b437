// c10d process groups. The TCPStore on rank 0 is the rendezvous; every rank then allreduces one
// flattened bucket of gradients per step.
#include "remote-runtime/train/distributed.hpp"

#include "remote-runtime/train/launcher_env.hpp"

#include <cstdlib>
#include <stdexcept>

#include <ATen/ATen.h>

// The CUDA wheels ship NCCL's c10d headers but not Gloo's; Debian's CPU build has Gloo only.
#if defined(FERRY_HAVE_GLOO) || defined(FERRY_HAVE_NCCL)
#define FERRY_HAVE_C10D 1
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif
#if defined(FERRY_HAVE_GLOO)
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if defined(FERRY_HAVE_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace ferry::train {
namespace {

#if defined(FERRY_HAVE_C10D)
template <typename Group>
class C10dGroup : public ProcessGroupHandle {
 public:
  C10dGroup(c10::intrusive_ptr<c10d::Store> store, c10::intrusive_ptr<Group> group, std::string backend)
      : store_(std::move(store)), group_(std::move(group)), backend_(std::move(backend)) {}

  void average(const std::vector<at::Tensor>& grads) override {
    std::vector<at::Tensor> present;
    for (const auto& g : grads) {
      if (g.defined()) present.push_back(g);
    }
    if (present.empty()) return;
    auto bucket = at::cat(flatten_views(present));
    // Gloo reduces host memory portably; a CUDA bucket takes a round trip through the host.
    const bool via_host = backend_ == "gloo" && bucket.is_cuda();
    std::vector<at::Tensor> flat = {via_host ? bucket.cpu() : bucket};
    group_->allreduce(flat)->wait();
    flat[0].div_(static_cast<double>(group_->getSize()));
    if (via_host) flat[0] = flat[0].to(bucket.device());
    std::int64_t offset = 0;
    for (auto& g : present) {
      g.copy_(flat[0].narrow(0, offset, g.numel()).view_as(g));
      offset += g.numel();
    }
  }

  void max_inplace(at::Tensor& t) override {
    const bool via_host = backend_ == "gloo" && t.is_cuda();
    std::vector<at::Tensor> v = {via_host ? t.cpu() : t};
    c10d::AllreduceOptions opts;
    opts.reduceOp = c10d::ReduceOp::MAX;
    group_->allreduce(v, opts)->wait();
    if (via_host) t.copy_(v[0]);
  }

  void barrier() override { group_->barrier()->wait(); }
  std::string backend() const override { return backend_; }

 private:
  static std::vector<at::Tensor> flatten_views(const std::vector<at::Tensor>& ts) {
    std::vector<at::Tensor> out;
    out.reserve(ts.size());
    for (const auto& t : ts) out.push_back(t.reshape({-1}));
    return out;
  }

  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<Group> group_;
  std::string backend_;
};
#endif

}  // namespace

Expected<DistributedEnv, std::string> distributed_env_from_environment() {
  auto launched = launcher_env_from_process();
  if (!launched) return Unexpected(launched.error());
  DistributedEnv env;
  env.rank = launched->rank;
  env.world_size = launched->world_size;
  env.local_rank = launched->local_rank;
  env.master_addr = launched->master_addr;
  env.master_port = launched->master_port;
  return env;
}

bool distributed_available() {
#if defined(FERRY_HAVE_C10D)
  return true;
#else
  return false;
#endif
}

std::string distributed_backends() {
  std::string out;
#if defined(FERRY_HAVE_GLOO)
  out = "gloo";
#endif
#if defined(FERRY_HAVE_NCCL)
  out += out.empty() ? "nccl" : "+nccl";
#endif
  return out.empty() ? "none" : out;
}

Expected<std::unique_ptr<ProcessGroupHandle>, std::string> ProcessGroupHandle::connect(const DistributedEnv& env,
                                                                                            [[maybe_unused]] bool cuda) {
#if defined(FERRY_HAVE_C10D)
  try {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(env.master_port);
    options.isServer = env.rank == 0;
    options.numWorkers = static_cast<std::size_t>(env.world_size);
    options.waitWorkers = true;
    options.timeout = std::chrono::milliseconds(120000);
    auto store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
#if defined(FERRY_HAVE_NCCL)
    if (cuda) {
      auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
      auto group = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, env.rank, env.world_size, nccl_options);
      return std::make_unique<C10dGroup<c10d::ProcessGroupNCCL>>(store, group, "nccl");
    }
#endif
#if defined(FERRY_HAVE_GLOO)
    auto gloo_options = c10d::ProcessGroupGloo::Options::create();
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
      gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
    } else if (env.master_addr == "127.0.0.1" || env.master_addr == "localhost") {
      gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    gloo_options->timeout = std::chrono::milliseconds(120000);
    auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, env.rank, env.world_size, gloo_options);
    return std::make_unique<C10dGroup<c10d::ProcessGroupGloo>>(store, group, "gloo");
#else
    return Unexpected(std::string("this ferry-train has c10d NCCL only (no Gloo headers at build time): "
                                       "multi-process runs need device cuda"));
#endif
  } catch (const std::exception& e) {
    return Unexpected(std::string("distributed init failed: ") + e.what());
  }
#else
  (void)env;
  return Unexpected("this ferry-train was built without torch.distributed (c10d Gloo or NCCL) support");
#endif
}

}  // namespace ferry::train
