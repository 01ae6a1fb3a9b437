// run/start, run/attach, run/input, run/signal, run/resize, run/detach, run/list for the editor,
// and the run/output + run/exited notifications, over the RunService (run_service.hpp). The runs
// live on the box (the agent's supervisor); the service starts and follows them on the
// project's one link.
#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "helper/cloud/notifier.hpp"
#include "helper/deploy/host_spec.hpp"
#include "helper/run/run_client.hpp"
#include "helper/run/slurm_allocation.hpp"
#include "helper/server/slurm_wait_progress.hpp"
#include "helper/server/error_codes.hpp"
#include "helper/server/run_service.hpp"
#include "protocol/base64.hpp"
#include "protocol/binding_table.hpp"
#include "protocol/link_state.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
namespace fs = std::filesystem;
using p::json;
using p::ResponseError;


// Strict UTF-8 (no overlongs, no surrogates, nothing past U+10FFFF).
bool is_valid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t n;
    std::uint32_t cp;
    if ((c >> 5) == 6) n = 1, cp = c & 0x1f;
    else if ((c >> 4) == 14) n = 2, cp = c & 0x0f;
    else if ((c >> 3) == 30) n = 3, cp = c & 0x07;
    else return false;
    if (i + n >= s.size()) return false;
    for (std::size_t k = 1; k <= n; ++k) {
      auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 2) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += n + 1;
  }
  return true;
}

json output_notification(const run::OutputRecord& r) {
  json j{{"id", r.id}, {"stream", r.stream == run::Stream::stderr_stream ? "stderr" : "stdout"}, {"offset", r.offset}};
  if (is_valid_utf8(r.data)) j["text"] = r.data;
  else j["base64"] = protocol::base64_encode(std::vector<std::uint8_t>(r.data.begin(), r.data.end()));
  return j;
}

RunService::~RunService() {
  std::map<std::string, std::shared_ptr<Followed>> followed;
  {
    std::lock_guard lock(mutex_);
    followed.swap(followed_);
  }
  for (auto& [id, f] : followed) stop(*f);
}

std::expected<p::RunStartResult, ResponseError> RunService::start(const RunStartParams& params, RunSink sink) {
  auto link = ctx_.link(params.path);
  if (!link) return std::unexpected(link.error());
  const deploy::ProjectConfig config = (*link)->config();
  run::LaunchRequest req;
  req.command = params.argv;
  req.interpreter = config.interpreter;
  req.config_env = config.env;
  for (const auto& [k, v] : params.env) req.cli_env.push_back(k + "=" + v);
  req.cwd = params.cwd;
  req.remote_base = (*link)->target().remote_base;
  req.mapping_root = (*link)->mapping_root();
  req.tty = params.tty;
  req.cols = params.cols;
  req.rows = params.rows;
  req.slurm = config.slurm;
  // A Slurm project's run goes into its allocation (ferry alloc) while one runs.
  if (auto placed = run::place_run((*link)->endpoint(), config, req); !placed) return std::unexpected(placed.error());
  auto spec = run::make_run_spec(req);
  if (!spec) return std::unexpected(response_error({ErrorKind::invalid_input, spec.error()}, p::method::kRunStart));
  // The start attaches the stream too (one round trip fewer before the first byte), with the ports
  // forward_ports would ask for.
  const bool ports = config.auto_forward_ports.enabled && !config.slurm;
  auto started = (*link)->runs().start(*spec, ports);
  if (!started) return std::unexpected(started.error());
  std::lock_guard lock(mutex_);
  const std::string what = params.argv.empty() ? "" : std::filesystem::path(params.argv.front()).filename().string();
  follow_locked(*link, started->id, 0, std::move(sink), spec->slurm.has_value() || !req.allocation.empty(), what,
                started->attached.has_value());
  return p::RunStartResult{started->id, started->pid, started->started_at, spec->argv, spec->cwd};
}

std::expected<ProjectLinkPtr, ResponseError> RunService::link_for(const std::string& id,
                                                                 const std::optional<std::string>& project) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = followed_.find(id); it != followed_.end()) return it->second->link;
  }
  return ctx_.link(project);
}

std::expected<p::RunAttachResult, ResponseError> RunService::attach(const std::string& id, std::uint64_t offset, RunSink sink,
                                                                    const std::optional<std::string>& project) {
  auto link = link_for(id, project);
  if (!link) return std::unexpected(link.error());
  // Check the id and offset first, so a bad one is this call's error, not a silent follower.
  auto probe = (*link)->runs().read(id, offset, 1);
  if (!probe) return std::unexpected(probe.error());
  std::shared_ptr<Followed> old;
  {
    std::lock_guard lock(mutex_);
    if (auto it = followed_.find(id); it != followed_.end()) {
      old = it->second;
      followed_.erase(it);
    }
  }
  if (!sink.output && old) sink = old->sink;
  if (old) stop(*old);
  std::lock_guard lock(mutex_);
  follow_locked(*link, id, offset, std::move(sink));
  return p::RunAttachResult{id, offset, probe->state};
}

std::expected<p::EmptyResult, ResponseError> RunService::detach(const std::string& id) {
  std::shared_ptr<Followed> f;
  {
    std::lock_guard lock(mutex_);
    auto it = followed_.find(id);
    if (it == followed_.end()) return p::EmptyResult{};
    f = it->second;
    followed_.erase(it);
  }
  stop(*f);
  (void)f->link->runs().detach(id);
  return p::EmptyResult{};
}

namespace {

// Run completion, failure and interruption to the webhook ($FERRY_WEBHOOK_URL), when one is set;
// only the redacted URL is ever logged.
void notify_webhook(const json& notice) {
  auto sent = cloud::send_notice(notice);
  if (!sent) return;
  if (!*sent) spdlog::warn("{} not delivered: {}", notice.value("event", "notice"), sent->error());
  else if (**sent >= 300) spdlog::warn("{}: the webhook answered HTTP {}", notice.value("event", "notice"), **sent);
}

}  // namespace

namespace {

std::expected<p::EmptyResult, ResponseError> empty_or_error(std::expected<void, ResponseError> r) {
  if (!r) return std::unexpected(r.error());
  return p::EmptyResult{};
}

}  // namespace

std::expected<p::EmptyResult, ResponseError> RunService::input(const std::string& id, const std::string& data, bool eof) {
  auto link = link_for(id);
  if (!link) return std::unexpected(link.error());
  return empty_or_error((*link)->runs().input(id, data, eof));
}

std::expected<p::EmptyResult, ResponseError> RunService::signal(const std::string& id, const std::string& signal,
                                                                const std::optional<std::string>& project) {
  auto n = run::signal_number(signal.empty() ? "INT" : signal);
  if (!n) return std::unexpected(response_error({ErrorKind::invalid_input, n.error()}, p::method::kRunSignal));
  auto link = link_for(id, project);
  if (!link) return std::unexpected(link.error());
  return empty_or_error((*link)->runs().signal(id, run::signal_name(*n)));
}

std::expected<p::EmptyResult, ResponseError> RunService::resize(const std::string& id, int cols, int rows) {
  auto link = link_for(id);
  if (!link) return std::unexpected(link.error());
  return empty_or_error((*link)->runs().resize(id, cols, rows));
}

std::expected<p::RunListResult, ResponseError> RunService::list(const std::optional<std::string>& project, bool all) {
  auto link = ctx_.link(project);
  if (!link) return std::unexpected(link.error());
  auto runs = (*link)->runs().list(all);
  if (!runs) return std::unexpected(runs.error());
  p::RunListResult out;
  for (const auto& r : *runs)
    out.runs.push_back({r.id, r.argv, r.cwd, r.root, r.state, r.pid, r.started_at, r.log_bytes, r.ended_at,
                        r.exit_code, r.signal, r.slurm_job, r.slurm_state, r.followed});
  return out;
}

std::vector<std::string> RunService::running() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& id : order_)
    if (auto it = followed_.find(id); it != followed_.end() && !it->second->ended) out.push_back(id);
  return out;
}

// A Slurm job's or step's processes are on a node the login agent cannot look into: none there.
void RunService::forward_ports(Followed& f, const std::string& id, const std::string& what) {
  const auto config = f.link->config();
  if (!config.auto_forward_ports.enabled || config.slurm) return;
  f.announcer = std::make_unique<PortAnnouncer>(ctx_, what.empty() ? "run " + id : what);
  f.ports = std::make_unique<run::PortForwarder>(
      f.link->endpoint(), config.auto_forward_ports, config.host == deploy::kLocalHost,
      [a = f.announcer.get()](const run::PortEvent& e, const std::optional<run::PortForward>& fw, const std::string& error) {
        a->announce(e, fw, error);
      });
  f.follower->watch_ports([p = f.ports.get()](const run::PortEvent& e) { p->on_port(e); });
}

void RunService::follow_locked(const ProjectLinkPtr& link, const std::string& id, std::uint64_t offset, RunSink sink,
                               bool slurm_job, const std::string& what, bool attached_at_start) {
  // Runs that ended are forgotten here: their threads have returned, and their links (maybe one
  // a changed ferry.json replaced) are let go.
  for (auto it = followed_.begin(); it != followed_.end();) {
    if (!it->second->ended) {
      ++it;
      continue;
    }
    stop(*it->second);
    std::erase(order_, it->first);
    it = followed_.erase(it);
  }
  auto f = std::make_shared<Followed>();
  f->link = link;
  if (!sink.output) sink.output = [this](const run::OutputRecord& r) { ctx_.client.notify("run/output", output_notification(r)); };
  if (!sink.exited)
    sink.exited = [this, project = link->config().name, host = link->host()](const json& j) {
      ctx_.client.notify("run/exited", j);
      notify_webhook(cloud::run_exit_notice(j, project, host));
    };
  if (slurm_job && progress_) {  // the job's wait as progress; the output still goes where it went
    auto wait = std::make_shared<SlurmWaitProgress>(*progress_);
    sink.output = [wait, inner = sink.output](const run::OutputRecord& r) {
      wait->see(r);
      inner(r);
    };
    sink.exited = [wait, inner = sink.exited](const json& j) {
      wait->finish();
      inner(j);
    };
  }
  f->sink = sink;
  f->follower = std::make_unique<run::RunFollower>(link->runs(), id, offset, sink.output);
  forward_ports(*f, id, what);
  // The stream stops with the link and resumes at the next byte on the new one.
  Followed* raw = f.get();
  f->states = link->on_state([raw](const remote::HostState& s) {
    if (s.state == protocol::LinkState::reconnecting && !raw->down.exchange(true)) raw->follower->link_lost();
    else if (s.state == protocol::LinkState::connected && raw->down.exchange(false)) raw->follower->link_restored();
  });
  // Before the loop, which would attach: the start's stream holds while the link it came on does.
  if (attached_at_start) f->follower->adopt_start_attach(link->endpoint().connected());
  f->thread = std::thread([this, raw] { follow_loop(*raw); });
  followed_[id] = f;
  std::erase(order_, id);
  order_.push_back(id);
}

void RunService::follow_loop(Followed& f) {
  auto& follower = *f.follower;
  while (!f.stop) {
    if (follower.needs_attach()) {
      (void)follower.attach();
      continue;
    }
    auto ev = follower.wait(std::chrono::steady_clock::now() + std::chrono::milliseconds(250));
    if (ev == run::RunFollower::Event::finished) {
      auto exit = *follower.exit();
      p::RunExitedParams exited;
      exited.id = follower.id();
      exited.status = run::exit_status(exit);
      exited.ended_at = exit.ended_at;
      exited.log_bytes = exit.log_bytes;
      exited.exit_code = exit.exit_code;
      exited.signal = exit.signal;
      f.ended = true;
      f.sink.exited(p::to_json(exited));
      return;
    }
    if (ev == run::RunFollower::Event::failed) {
      f.ended = true;
      p::RunExitedParams exited;
      exited.id = follower.id();
      exited.status = run::kFerryFailure;
      exited.error = *follower.failed();
      f.sink.exited(p::to_json(exited));
      return;
    }
  }
}

void RunService::stop(Followed& f) {
  f.states.reset();  // no state change reaches the follower after this
  f.stop = true;
  if (f.thread.joinable()) f.thread.join();
}

void bind_run_methods(p::BindingTable& table, std::shared_ptr<RunService> service) {
  using p::RunIdParams;
  table.request<RunStartParams, p::RunStartResult>(
      p::method::kRunStart, [service](const RunStartParams& params, p::CallContext&) { return service->start(params); },
      p::Execution::worker);
  table.request<RunIdParams, p::RunAttachResult>(
      p::method::kRunAttach,
      [service](const RunIdParams& params, p::CallContext&) { return service->attach(params.id, params.offset, {}, params.path); },
      p::Execution::worker);
  table.request<RunIdParams, p::EmptyResult>(
      p::method::kRunDetach, [service](const RunIdParams& params, p::CallContext&) { return service->detach(params.id); },
      p::Execution::worker);
  table.request<RunIdParams, p::EmptyResult>(
      p::method::kRunInput,
      [service](const RunIdParams& params, p::CallContext&) -> std::expected<p::EmptyResult, ResponseError> {
        std::string data;
        if (params.text) data = *params.text;
        if (params.base64) {
          auto bytes = protocol::base64_decode(*params.base64);
          if (!bytes) return std::unexpected(response_error({ErrorKind::invalid_input, "base64: " + bytes.error()}, p::method::kRunInput));
          data.assign(bytes->begin(), bytes->end());
        }
        return service->input(params.id, data, params.eof);
      },
      p::Execution::worker);
  table.request<RunIdParams, p::EmptyResult>(
      p::method::kRunSignal,
      [service](const RunIdParams& params, p::CallContext&) { return service->signal(params.id, params.signal, params.path); },
      p::Execution::worker);
  table.request<RunIdParams, p::EmptyResult>(
      p::method::kRunResize,
      [service](const RunIdParams& params, p::CallContext&) { return service->resize(params.id, params.cols, params.rows); },
      p::Execution::worker);
  table.request<p::RunListParams, p::RunListResult>(
      p::method::kRunList,
      [service](const p::RunListParams& params, p::CallContext&) { return service->list(params.path, params.all); },
      p::Execution::worker);
  table.reserve_name(p::method::kRunOutput);
  table.reserve_name(p::method::kRunExited);
}

}  // namespace ferry::server
