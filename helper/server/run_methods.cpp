// run/start, run/attach, run/input, run/signal, run/resize, run/detach, run/list for the editor,
// and the run/output + run/exited notifications, over the RunService (run_service.hpp). The runs
// live on the box (the agent's supervisor); the service starts and follows them on the
// project's one link.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "helper/cloud/notifier.hpp"
#include "helper/run/run_client.hpp"
#include "helper/server/run_service.hpp"
#include "protocol/base64.hpp"
#include "protocol/binding_table.hpp"
#include "protocol/json_reader.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
namespace fs = std::filesystem;
using p::json;
using p::ResponseError;


std::optional<p::DecodeError> from_json(const json& j, RunStartParams& out, const std::string& ptr) {
  p::ObjectReader r(j, ptr);
  r.optional("path", out.path);
  r.required("argv", out.argv);
  r.optional("cwd", out.cwd);
  r.optional("env", out.env);
  r.optional("tty", out.tty);
  r.optional("cols", out.cols);
  r.optional("rows", out.rows);
  r.check(!out.argv.empty(), "argv", "expected at least one word");
  return r.error();
}

struct RunIdParams {
  std::string id;
  std::uint64_t offset = 0;
  std::string signal;
  std::optional<std::string> text, base64;
  bool eof = false;
  int cols = 0, rows = 0;
};

std::optional<p::DecodeError> from_json(const json& j, RunIdParams& out, const std::string& ptr) {
  p::ObjectReader r(j, ptr);
  r.required("id", out.id);
  std::int64_t offset = 0;
  r.optional("offset", offset);
  r.check(offset >= 0, "offset", "expected a byte offset (0 or more)");
  out.offset = static_cast<std::uint64_t>(offset);
  if (j.is_object() && j.contains("signal")) {
    const json& s = j["signal"];
    if (s.is_number_integer()) out.signal = std::to_string(s.get<int>());
    else r.optional("signal", out.signal);
  }
  r.optional("text", out.text);
  r.optional("base64", out.base64);
  r.optional("eof", out.eof);
  r.optional("cols", out.cols);
  r.optional("rows", out.rows);
  return r.error();
}

struct RunListParams {
  std::optional<std::string> path;
  bool all = false;
};

std::optional<p::DecodeError> from_json(const json& j, RunListParams& out, const std::string& ptr) {
  p::ObjectReader r(j, ptr);
  r.optional("path", out.path);
  r.optional("all", out.all);
  return r.error();
}

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

std::expected<json, ResponseError> RunService::start(const RunStartParams& params, RunSink sink) {
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
  auto spec = run::make_run_spec(req);
  if (!spec) return std::unexpected(ResponseError{p::error_code::kInvalidParams, "run/start: " + spec.error(), {}});
  auto started = (*link)->runs().start(*spec);
  if (!started) return std::unexpected(started.error());
  std::lock_guard lock(mutex_);
  follow_locked(*link, started->id, 0, std::move(sink));
  return json{{"id", started->id}, {"pid", started->pid}, {"startedAt", started->started_at}, {"argv", spec->argv},
              {"cwd", spec->cwd}};
}

std::expected<ProjectLinkPtr, ResponseError> RunService::link_for(const std::string& id) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = followed_.find(id); it != followed_.end()) return it->second->link;
  }
  return ctx_.link(std::nullopt);
}

std::expected<json, ResponseError> RunService::attach(const std::string& id, std::uint64_t offset, RunSink sink) {
  auto link = link_for(id);
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
  return json{{"id", id}, {"offset", offset}, {"state", probe->state}};
}

std::expected<json, ResponseError> RunService::detach(const std::string& id) {
  std::shared_ptr<Followed> f;
  {
    std::lock_guard lock(mutex_);
    auto it = followed_.find(id);
    if (it == followed_.end()) return json::object();
    f = it->second;
    followed_.erase(it);
  }
  stop(*f);
  (void)f->link->runs().detach(id);
  return json::object();
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

std::expected<json, ResponseError> empty_or_error(std::expected<void, ResponseError> r) {
  if (!r) return std::unexpected(r.error());
  return json::object();
}

}  // namespace

std::expected<json, ResponseError> RunService::input(const std::string& id, const std::string& data, bool eof) {
  auto link = link_for(id);
  if (!link) return std::unexpected(link.error());
  return empty_or_error((*link)->runs().input(id, data, eof));
}

std::expected<json, ResponseError> RunService::signal(const std::string& id, const std::string& signal) {
  auto n = run::signal_number(signal.empty() ? "INT" : signal);
  if (!n) return std::unexpected(ResponseError{p::error_code::kInvalidParams, "run/signal: " + n.error(), {}});
  auto link = link_for(id);
  if (!link) return std::unexpected(link.error());
  return empty_or_error((*link)->runs().signal(id, run::signal_name(*n)));
}

std::expected<json, ResponseError> RunService::resize(const std::string& id, int cols, int rows) {
  auto link = link_for(id);
  if (!link) return std::unexpected(link.error());
  return empty_or_error((*link)->runs().resize(id, cols, rows));
}

std::expected<json, ResponseError> RunService::list(const std::optional<std::string>& project, bool all) {
  auto link = ctx_.link(project);
  if (!link) return std::unexpected(link.error());
  auto runs = (*link)->runs().list(all);
  if (!runs) return std::unexpected(runs.error());
  json arr = json::array();
  for (const auto& r : *runs) {
    json j{{"id", r.id}, {"argv", r.argv}, {"cwd", r.cwd}, {"root", r.root}, {"state", r.state},
           {"pid", r.pid}, {"startedAt", r.started_at}, {"logBytes", r.log_bytes}};
    if (!r.ended_at.empty()) j["endedAt"] = r.ended_at;
    if (r.exit_code) j["exitCode"] = *r.exit_code;
    if (r.signal) j["signal"] = *r.signal;
    arr.push_back(std::move(j));
  }
  return json{{"runs", std::move(arr)}};
}

std::vector<std::string> RunService::running() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& id : order_)
    if (auto it = followed_.find(id); it != followed_.end() && !it->second->ended) out.push_back(id);
  return out;
}

void RunService::follow_locked(const ProjectLinkPtr& link, const std::string& id, std::uint64_t offset, RunSink sink) {
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
  f->sink = sink;
  f->follower = std::make_unique<run::RunFollower>(link->runs(), id, offset, sink.output);
  // The stream stops with the link and resumes at the next byte on the new one.
  Followed* raw = f.get();
  f->states = link->on_state([raw](const remote::HostState& s) {
    if (s.state == "reconnecting" && !raw->down.exchange(true)) raw->follower->link_lost();
    else if (s.state == "connected" && raw->down.exchange(false)) raw->follower->link_restored();
  });
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
      json j{{"id", follower.id()}, {"endedAt", exit.ended_at}, {"logBytes", exit.log_bytes},
             {"status", run::exit_status(exit)}};
      if (exit.exit_code) j["exitCode"] = *exit.exit_code;
      if (exit.signal) j["signal"] = *exit.signal;
      f.ended = true;
      f.sink.exited(j);
      return;
    }
    if (ev == run::RunFollower::Event::failed) {
      f.ended = true;
      f.sink.exited(json{{"id", follower.id()}, {"status", run::kFerryFailure}, {"error", *follower.failed()}});
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
  table.request<RunStartParams, json>(
      "run/start", [service](const RunStartParams& params, p::CallContext&) { return service->start(params); },
      p::Execution::worker);
  table.request<RunIdParams, json>(
      "run/attach", [service](const RunIdParams& params, p::CallContext&) { return service->attach(params.id, params.offset); },
      p::Execution::worker);
  table.request<RunIdParams, json>(
      "run/detach", [service](const RunIdParams& params, p::CallContext&) { return service->detach(params.id); },
      p::Execution::worker);
  table.request<RunIdParams, json>(
      "run/input",
      [service](const RunIdParams& params, p::CallContext&) -> std::expected<json, ResponseError> {
        std::string data;
        if (params.text) data = *params.text;
        if (params.base64) {
          auto bytes = protocol::base64_decode(*params.base64);
          if (!bytes) return std::unexpected(ResponseError{p::error_code::kInvalidParams, "run/input: base64: " + bytes.error(), {}});
          data.assign(bytes->begin(), bytes->end());
        }
        return service->input(params.id, data, params.eof);
      },
      p::Execution::worker);
  table.request<RunIdParams, json>(
      "run/signal", [service](const RunIdParams& params, p::CallContext&) { return service->signal(params.id, params.signal); },
      p::Execution::worker);
  table.request<RunIdParams, json>(
      "run/resize",
      [service](const RunIdParams& params, p::CallContext&) { return service->resize(params.id, params.cols, params.rows); },
      p::Execution::worker);
  table.request<RunListParams, json>(
      "run/list", [service](const RunListParams& params, p::CallContext&) { return service->list(params.path, params.all); },
      p::Execution::worker);
  table.reserve_name("run/output");
  table.reserve_name("run/exited");
}

}  // namespace ferry::server
