// train/start and train/stop for the IDE: ferry-train CONFIG as a run on the project's host
// (through TrainSession, like `ferry train`), its events as `train/metrics` notifications
// {runId, event}, and `train/exited` {runId, exitCode|signal, status, outputs, notes} once it has
// ended and its plot, CSV and newest checkpoint were pulled. Trainings ride the project's one
// link, each with its own follower thread, so a long run never holds up sync or other requests.
#include <atomic>
#include <filesystem>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "common/wakeup.hpp"
#include "helper/run/run_exit.hpp"
#include "helper/run/slurm_allocation.hpp"
#include "helper/server/error_codes.hpp"
#include "helper/server/sync_result.hpp"
#include "helper/server/train_service.hpp"
#include "helper/sync/sync_engine.hpp"
#include "helper/train/train_session.hpp"
#include "protocol/binding_table.hpp"
#include "protocol/link_state.hpp"
#include "protocol/outgoing_requests.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
namespace fs = std::filesystem;
using p::json;
using p::ResponseError;


using p::TrainStopParams;

namespace {

// One training on the project's link: its engine, session and follower thread.
struct Training {
  ProjectLinkPtr link;
  std::shared_ptr<sync::SyncEngine> engine;
  std::unique_ptr<training::TrainSession> session;
  remote::Subscription states;
  std::thread follower;
  platform::Wakeup stop;  // raised when the server stops following it (shutdown)
  std::atomic<bool> finished{false};

  ~Training() {
    states.reset();
    if (follower.joinable()) follower.join();
    session.reset();
  }
};

}  // namespace

class TrainService {
 public:
  explicit TrainService(const ServerContext& ctx) : ctx_(ctx) {}
  ~TrainService() {
    std::lock_guard lock(mu_);
    // The runs go on on the box (they are runs); only the following stops.
    for (auto& t : trainings_) t->stop.raise();
    trainings_.clear();
  }

  // sinks: where the events go besides train/metrics (a plain client's log file); may be empty.
  std::expected<p::TrainStartResult, ResponseError> start(const TrainStartParams& params, p::CallContext& ctx,
                                                          TrainObserver observer = {}) {
    auto config = lookup_project(params.path, ctx_.workspace);
    if (!config) return std::unexpected(config.error());
    auto t = std::make_shared<Training>();
    const bool local = config->host == "local";
    auto link = ctx_.sessions.link(*config, ctx.cancellation());
    if (!link) return std::unexpected(link.error());
    t->link = *link;
    if (ctx.cancelled()) return std::unexpected(p::cancelled_error("train/start"));
    t->engine = t->link->engine();

    // Set before the run starts: events can arrive before start() returns.
    auto run_id = std::make_shared<std::string>();
    auto id_mu = std::make_shared<std::mutex>();
    auto early = std::make_shared<std::vector<json>>();
    training::TrainSinks sinks;
    const bool notify = !observer.event;
    sinks.on_event = [this, run_id, id_mu, early, notify, observer](const training::TrainEvent& e, std::string_view line) {
      if (observer.event) observer.event(e, line);
      if (!notify) return;
      std::lock_guard lock(*id_mu);
      if (run_id->empty()) early->push_back(e.body);
      else ctx_.client.notify(std::string(p::method::kTrainMetrics), p::to_json(p::TrainMetricsParams{*run_id, e.body}));
    };
    sinks.on_stderr = [observer](std::string_view bytes) {
      spdlog::debug("ferry-train stderr: {}", bytes);
      if (observer.other) observer.other(bytes);
    };
    sinks.on_other_stdout = [observer](std::string_view line) {
      if (observer.other) observer.other(line);
    };
    // The trainer's build on the box (first train there) as $/progress with its ETA.
    auto build_progress = std::make_shared<p::WorkDoneProgress>(ctx.progress());
    auto build_begun = std::make_shared<bool>(false);
    sinks.on_build = [build_progress, build_begun](const training::BuildProgressParser& b) {
      const auto& bp = b.progress();
      std::string message = b.bar(80);
      std::optional<int> percent = bp.total > 0 ? std::optional<int>(bp.percent()) : std::nullopt;
      if (!*build_begun) {
        build_progress->begin("Building ferry-train on the box", message, percent, false);
        *build_begun = true;
      } else {
        build_progress->report(message, percent);
      }
    };
    t->session = std::make_unique<training::TrainSession>(t->link->endpoint(), *t->engine, sinks);
    Training* raw = t.get();
    t->states = t->link->on_state([raw](const remote::HostState& s) {
      const auto state = s.state;
      if (state == protocol::LinkState::reconnecting) raw->session->link_lost();
      else if (state == protocol::LinkState::connected) raw->session->link_restored();
    });

    training::TrainRequest request;
    request.config = fs::path(params.config).is_absolute() ? fs::path(params.config) : config->root / params.config;
    request.resume = params.resume;
    request.sync = params.sync;
    request.binary = params.trainer.value_or(config->trainer);
    request.interpreter = config->interpreter;
    request.local_host = local;
    request.env = config->env;
    request.slurm = config->slurm;
    // With `ferry alloc`'s allocation the training is a step of it, started at once.
    if (config->slurm) {
      auto job = run::running_allocation(t->link->endpoint(), *config);
      if (!job) return std::unexpected(job.error());
      if (*job) request.allocation = (*job)->job_id;
    }
    auto id = t->session->start(request);
    if (*build_begun) build_progress->end(id || t->session->trainer() ? "ferry-train built" : "building ferry-train failed");
    // The session's error carries its kind: the link going down is agent_lost, a bad config
    // invalid_input.
    if (!id) return std::unexpected(response_error(id.error(), p::method::kTrainStart));
    {
      std::lock_guard lock(*id_mu);
      *run_id = *id;
      for (auto& body : *early)
        ctx_.client.notify(std::string(p::method::kTrainMetrics), p::to_json(p::TrainMetricsParams{*id, std::move(body)}));
      early->clear();
    }

    p::TrainStartResult result{*id, t->session->launch().argv, t->session->launch().cwd, config->host, std::nullopt};
    if (const auto& s = t->session->sync_summary()) result.sync = sync_result(*s);

    t->follower = std::thread([this, raw, id = *id, observer] { follow(*raw, id, observer); });
    std::lock_guard lock(mu_);
    reap_locked();
    trainings_.push_back(std::move(t));
    return result;
  }

  std::expected<p::EmptyResult, ResponseError> stop(const TrainStopParams& params) {
    std::lock_guard lock(mu_);
    for (auto& t : trainings_) {
      if (t->session && t->session->run_id() == params.run_id && !t->finished) {
        auto sent = t->session->signal(params.signal);
        if (!sent) return std::unexpected(response_error(sent.error(), p::method::kTrainStop));
        return p::EmptyResult{};
      }
    }
    return std::unexpected(response_error(
        {ErrorKind::invalid_input, "no training " + params.run_id + " is being followed by this server"},
        p::method::kTrainStop));
  }

 private:
  static ResponseError error(std::string message) { return response_error({ErrorKind::io, std::move(message)}); }

  void follow(Training& t, const std::string& id, const TrainObserver& observer) {
    bool abandoned = false;
    auto exit = t.session->follow(&t.stop, [&] { abandoned = true; }, [&] { return abandoned; });
    p::TrainExitedParams done;
    done.run_id = id;
    if (!exit) {
      done.error = exit.error().message;
    } else {
      done.exit_code = exit->exit_code;
      done.signal = exit->signal;
      done.status = run::exit_status(*exit);
      if (t.session->saw_done() || t.session->last_checkpoint()) {
        auto pulled = t.session->pull_outputs();
        done.outputs.emplace();
        for (const auto& f : pulled.files) done.outputs->push_back(f.string());
        done.notes = pulled.notes;
      }
    }
    t.finished = true;
    if (abandoned) return;
    if (observer.exited) observer.exited(p::to_json(done));
    else ctx_.client.notify(std::string(p::method::kTrainExited), p::to_json(done));
  }

  // Trainings that ended are dropped when the next one starts.
  void reap_locked() {
    trainings_.remove_if([](const std::shared_ptr<Training>& t) { return t->finished.load(); });
  }

  const ServerContext& ctx_;
  std::mutex mu_;
  std::list<std::shared_ptr<Training>> trainings_;
};

std::shared_ptr<TrainService> make_train_service(const ServerContext& ctx) { return std::make_shared<TrainService>(ctx); }

std::expected<p::TrainStartResult, ResponseError> start_training(TrainService& service, const TrainStartParams& params,
                                                                 p::CallContext& ctx, TrainObserver observer) {
  return service.start(params, ctx, std::move(observer));
}

std::expected<p::EmptyResult, ResponseError> stop_training(TrainService& service, const std::string& run_id) {
  return service.stop(TrainStopParams{run_id, "INT"});
}

void bind_train_methods(p::BindingTable& table, std::shared_ptr<TrainService> service) {
  table.request<TrainStartParams, p::TrainStartResult>(
      p::method::kTrainStart, [service](const TrainStartParams& params, p::CallContext& ctx) { return service->start(params, ctx); },
      p::Execution::worker);
  table.request<TrainStopParams, p::EmptyResult>(
      p::method::kTrainStop, [service](const TrainStopParams& params, p::CallContext&) { return service->stop(params); },
      p::Execution::worker);
  table.reserve_name(p::method::kTrainMetrics);
  table.reserve_name(p::method::kTrainExited);
}

}  // namespace ferry::server
