// gpu/status, gpu/watch and gpu/unwatch for the IDE: the agent's gpu/status on the project's
// link, with the host's price and the live cost of each running run (ferry.json `price`);
// gpu/watch sends the same as gpu/sample notifications (1 Hz by default) until gpu/unwatch, a
// new gpu/watch, or the server's end.
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "helper/cloud/cost_estimate.hpp"
#include "helper/server/allocation_status.hpp"
#include "helper/server/host_methods.hpp"
#include "protocol/messages_gpu.hpp"
#include "protocol/messages_run.hpp"
#include "protocol/messages_sync.hpp"  // SyncProjectParams: {path?}, the project

namespace ferry::server {

namespace p = ferry::protocol;
using json = nlohmann::json;

namespace {

// The agent's answer plus the money: usdPerHour and each running run's cost so far; on a Slurm
// project its allocation and the time it has left instead.
std::expected<p::GpuStatusResult, p::ResponseError> gpu_status(const ServerContext& ctx, AllocationStatus& allocation,
                                                              const std::optional<std::string>& project,
                                                              const p::CancellationToken& cancel) {
  auto link = ctx.link(project, cancel);
  if (!link) return std::unexpected(link.error());
  auto status = (*link)->endpoint().call(std::string(p::method::kGpuStatus), json::object());
  if (!status) return std::unexpected(status.error());
  p::GpuStatusResult out{std::move(*status), std::nullopt, std::nullopt, std::nullopt};
  const auto config = (*link)->config();
  out.slurm = allocation.status((*link)->endpoint(), config);
  if (!config.price) return out;
  auto catalog = cloud::effective_catalog(config.gpu_catalog);
  auto rate = catalog ? cloud::host_rate(*config.price, *catalog) : std::unexpected(catalog.error());
  if (!rate) return out;
  const double per_hour = cloud::billed_usd_per_hour(*rate, *config.price);
  out.usd_per_hour = per_hour;
  auto& runs = out.runs.emplace();
  if (auto list = (*link)->endpoint().call("run/list", json::object()); list && list->contains("runs")) {
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (const auto& r : (*list)["runs"]) {
      if (protocol::run_state_from_string(r.value("state", "")) != protocol::RunState::running) continue;
      auto start = cloud::parse_iso_utc(r.value("startedAt", ""));
      if (!start) continue;
      runs.push_back({r.value("id", ""), static_cast<double>(cloud::cost_cents(per_hour, (now - *start) / 3600)) / 100.0});
    }
  }
  return out;
}

// One sampling thread per server; stopped by gpu/unwatch, a new gpu/watch or destruction.
class GpuWatcher {
 public:
  GpuWatcher(const ServerContext& ctx, std::shared_ptr<AllocationStatus> allocation) : ctx_(ctx), allocation_(std::move(allocation)) {}
  ~GpuWatcher() { stop(); }
  void start(int interval_ms) {
    stop();
    std::lock_guard lock(mutex_);
    stopping_ = false;
    thread_ = std::thread([this, interval_ms] { loop(interval_ms); });
  }
  bool stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (!thread_.joinable()) return false;
    thread_.join();
    return true;
  }

 private:
  void loop(int interval_ms) {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      lock.unlock();
      auto status = gpu_status(ctx_, *allocation_, std::nullopt, {});
      p::GpuSampleParams sample;
      if (status) sample.status = std::move(*status);
      else sample.error = status.error().message;
      ctx_.client.notify(std::string(p::method::kGpuSample), to_json(sample));
      lock.lock();
      if (!sample.status) break;  // no link: the IDE watches again after host/connect
      wake_.wait_for(lock, std::chrono::milliseconds(interval_ms), [this] { return stopping_; });
    }
  }
  const ServerContext& ctx_;
  std::shared_ptr<AllocationStatus> allocation_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace

void bind_gpu_methods(p::BindingTable& table, const ServerContext& ctx) {
  auto allocation = std::make_shared<AllocationStatus>(
      [&ctx](const std::string& warning) { ctx.client.notify("window/showMessage", json{{"type", 2}, {"message", warning}}); });
  auto watcher = std::make_shared<GpuWatcher>(ctx, allocation);
  table.request<p::SyncProjectParams, p::GpuStatusResult>(
      p::method::kGpuStatus,
      [&ctx, allocation](const p::SyncProjectParams& params, p::CallContext& call) {
        return gpu_status(ctx, *allocation, params.path, call.cancellation());
      },
      p::Execution::worker);
  table.request<p::GpuWatchParams, p::GpuWatchResult>(
      p::method::kGpuWatch,
      [watcher](const p::GpuWatchParams& params, p::CallContext&) -> std::expected<p::GpuWatchResult, p::ResponseError> {
        watcher->start(params.interval_ms);
        return p::GpuWatchResult{true, params.interval_ms};
      },
      p::Execution::worker);
  table.request<p::EmptyParams, p::GpuUnwatchResult>(
      p::method::kGpuUnwatch,
      [watcher](const p::EmptyParams&, p::CallContext&) -> std::expected<p::GpuUnwatchResult, p::ResponseError> {
        return p::GpuUnwatchResult{watcher->stop()};
      },
      p::Execution::worker);
}

}  // namespace ferry::server
