// See train_session.hpp.
#include "helper/train/train_session.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "helper/remote/ssh_endpoint.hpp"
#include "protocol/json_parse.hpp"
#include "protocol/slurm_alloc.hpp"

namespace ferry::training {
namespace fs = std::filesystem;

TrainSession::TrainSession(remote::Endpoint& endpoint, sync::SyncEngine& engine, TrainSinks sinks)
    : endpoint_(endpoint), engine_(engine), sinks_(std::move(sinks)) {}

TrainSession::~TrainSession() {
  follower_.reset();  // unwatches before the client goes
  client_.reset();
}

namespace {

// find_local_train_binary, make_train_launch and join_inside only check what the user gave (the
// config's place, $FERRY_TRAIN): their string errors are invalid_input here.
Error bad_input(std::string message) { return Error{ErrorKind::invalid_input, std::move(message)}; }

}  // namespace

std::expected<std::string, Error> TrainSession::start(const TrainRequest& request) {
  std::ifstream in(request.config);
  if (!in) return std::unexpected(bad_input("cannot read " + request.config.string()));
  config_ = protocol::parse_json_text(std::string(std::istreambuf_iterator<char>(in), {}))
                .value_or(nlohmann::json(nlohmann::json::value_t::discarded));
  if (config_.is_discarded() || !config_.is_object())
    return std::unexpected(bad_input(request.config.string() + " is not a JSON object (ferry-train CONFIG --validate says where)"));

  std::string binary = request.binary;
  if (binary.empty()) {
    if (request.local_host) {
      auto found = find_local_train_binary();
      if (!found) return std::unexpected(bad_input(std::move(found.error())));
      binary = found->string();
    } else if (auto* ssh = dynamic_cast<remote::SshEndpoint*>(&endpoint_)) {
      TrainerInstallOptions options;
      options.interpreter = request.interpreter;
      options.env = request.env;
      options.on_progress = sinks_.on_build;
      auto installed = ensure_trainer(*ssh, options);
      // ensure_trainer's errors are strings (trainer_install.hpp): one that came as the link went
      // down is the agent's loss, any other a failed probe or build on the box.
      if (!installed) return std::unexpected(Error{endpoint_.connected() ? ErrorKind::io : ErrorKind::agent_lost, std::move(installed.error())});
      trainer_ = std::move(*installed);
      binary = trainer_->path;
    } else {
      binary = "ferry-train";
    }
  }
  auto launch = make_train_launch(request.config, engine_.target().local_root, binary, request.resume);
  if (!launch) return std::unexpected(bad_input(std::move(launch.error())));
  launch_ = std::move(*launch);
  local_host_ = request.local_host;

  if (request.sync) {
    auto pushed = sync_.push ? sync_.push() : engine_.push({});
    if (!pushed) return std::unexpected(Error{pushed.error().kind, "sync before training failed: " + pushed.error().message});
    sync_summary_ = std::move(*pushed);
  }

  run::RunSpec spec;
  spec.argv = launch_.argv;
  auto cwd = join_inside(engine_.target().remote_base, launch_.cwd);
  if (!cwd) return std::unexpected(bad_input("the config's directory leaves the mapping"));
  spec.cwd = *cwd;
  spec.env = request.env;
  if (!request.allocation.empty()) {
    auto step = protocol::srun_step_arguments(request.allocation, "", false, request.slurm ? request.slurm->nodes : 1);
    spec.argv.insert(spec.argv.begin(), step.begin(), step.end());
  } else {
    spec.slurm = request.slurm;
  }
  client_ = std::make_unique<run::RunClient>(endpoint_);
  auto started = client_->start(spec);
  if (!started) {
    Error e = remote::call_error(started.error(), "starting " + binary + " on " + endpoint_.description() + ": " + started.error().message);
    if (started.error().message.find("not found") != std::string::npos) {
      // The trainer named (--trainer, ferry.json, $FERRY_TRAIN) is not there: the user's to fix.
      e.kind = ErrorKind::invalid_input;
      e.message += request.local_host
                       ? " (build ferry-train next to ferry, or set $FERRY_TRAIN)"
                       : " (check --trainer or ferry.json's trainer; without either ferry builds ferry-train on the box itself)";
    }
    return std::unexpected(std::move(e));
  }
  run_id_ = started->id;
  follower_ = std::make_unique<run::RunFollower>(*client_, run_id_, 0, [this](const run::OutputRecord& r) { on_record(r); });
  return run_id_;
}

void TrainSession::on_record(const run::OutputRecord& record) {
  if (record.stream == run::Stream::stderr_stream) {
    if (sinks_.on_stderr) sinks_.on_stderr(record.data);
    return;
  }
  stdout_lines_.feed(record.data, [this](std::string_view line) {
    auto event = parse_train_event(line);
    if (!event) {
      if (sinks_.on_other_stdout && !line.empty()) sinks_.on_other_stdout(line);
      return;
    }
    {
      std::lock_guard lock(mu_);
      if (event->kind == "done") done_ = true;
      if (event->kind == "checkpoint") {
        if (auto p = event->body.find("path"); p != event->body.end() && p->is_string()) checkpoint_ = p->get<std::string>();
      }
    }
    if (sinks_.on_event) sinks_.on_event(*event, line);
  });
}

std::expected<run::RunExit, Error> TrainSession::follow(platform::Wakeup* interrupt, const std::function<void()>& on_interrupt,
                                                       const std::function<bool()>& abandon) {
  if (!follower_) return std::unexpected(Error{ErrorKind::internal, "no run started"});
  for (;;) {
    if (follower_->finished()) break;
    if (auto failed = follower_->failed()) return std::unexpected(Error{ErrorKind::io, "following run " + run_id_ + ": " + *failed});
    if (follower_->needs_attach()) {
      auto attached = follower_->attach();
      if (!attached && follower_->failed())
        return std::unexpected(remote::call_error(attached.error(), "attaching to run " + run_id_ + ": " + attached.error().message));
      continue;
    }
    platform::Wakeup* wakeups[2] = {&follower_->wakeup(), interrupt};
    platform::wait_any(std::span(wakeups, interrupt ? 2 : 1), std::chrono::seconds(1));
    follower_->drain();
    if (interrupt && interrupt->take()) {
      if (on_interrupt) on_interrupt();
      if (abandon && abandon()) return std::unexpected(Error{ErrorKind::cancelled, "stopped following run " + run_id_ + " (it goes on)"});
    }
    // A dead local agent never comes back (an SSH link does: link_lost/link_restored), so stop waiting.
    if (local_host_ && !endpoint_.connected() && !follower_->link_down() && !follower_->finished())
      return std::unexpected(Error{ErrorKind::agent_lost, "lost the agent on " + endpoint_.description() + " while following run " +
                                                              run_id_ + " (it goes on; `ferry attach " + run_id_ + "` resumes)"});
  }
  stdout_lines_.finish([this](std::string_view line) {
    if (sinks_.on_other_stdout && !line.empty()) sinks_.on_other_stdout(line);
  });
  return *follower_->exit();
}

std::expected<void, Error> TrainSession::signal(const std::string& name, bool kill_on_disconnect) {
  if (!client_ || run_id_.empty()) return std::unexpected(Error{ErrorKind::invalid_input, "no run started"});
  auto r = client_->signal(run_id_, name, kill_on_disconnect);
  if (!r) return std::unexpected(remote::call_error(r.error(), r.error().message));
  return {};
}

void TrainSession::link_lost() {
  if (follower_) follower_->link_lost();
}

void TrainSession::link_restored() {
  if (follower_) follower_->link_restored();
}

bool TrainSession::saw_done() const {
  std::lock_guard lock(mu_);
  return done_;
}

std::optional<std::string> TrainSession::last_checkpoint() const {
  std::lock_guard lock(mu_);
  return checkpoint_;
}

PulledOutputs TrainSession::pull_outputs() {
  PulledOutputs out;
  auto outputs = train_outputs(config_, launch_.cwd, last_checkpoint());
  if (!outputs) {
    out.notes.push_back("not pulling outputs: " + outputs.error());
    return out;
  }
  for (const auto& s : outputs->skipped) out.notes.push_back(s + " is outside the mapping: left on the box");
  if (outputs->files.empty()) return out;
  // The outputs are the box's to write: a local copy from an earlier run is replaced.
  sync::SyncOptions options;
  options.force = true;
  auto pulled = sync_.pull ? sync_.pull(outputs->files) : engine_.pull(outputs->files, options);
  if (!pulled) {
    out.notes.push_back("pulling the outputs failed: " + pulled.error().message);
    return out;
  }
  for (const auto& e : pulled->errors) out.notes.push_back(e);
  for (const auto& f : outputs->files) {
    fs::path local = engine_.target().local_root / f;
    std::error_code ec;
    if (fs::exists(local, ec)) out.files.push_back(local);
  }
  return out;
}

}  // namespace ferry::training
