// run/start, run/attach, run/input, run/signal, run/resize, run/detach, run/list for the IDE, and
// the run/output + run/exited notifications. The runs live on the box (the agent's supervisor);
// this service only starts them and follows their output, one follower thread per followed run,
// re-attaching at the next offset after an SSH reconnect. run/output carries `text` when the
// record's bytes are valid UTF-8, else `base64`.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <spdlog/spdlog.h>

#include "helper/remote/endpoint_factory.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/run/run_client.hpp"
#include "helper/run/run_follower.hpp"
#include "helper/server/project_lookup.hpp"
#include "helper/server/server.hpp"
#include "helper/ssh/known_hosts.hpp"
#include "helper/sync/mapping_target.hpp"
#include "protocol/binding_table.hpp"
#include "protocol/json_reader.hpp"
#include "protocol/outgoing_requests.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
namespace fs = std::filesystem;
using p::json;
using p::ResponseError;

struct RunStartParams {
  std::optional<std::string> path;  // the project
  std::vector<std::string> argv;    // as after `ferry run --`
  std::string cwd;                  // relative to the mapping root
  std::map<std::string, std::string> env;
  bool tty = false;
  int cols = 0, rows = 0;
};

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
  else j["base64"] = ssh::base64_encode(std::vector<std::uint8_t>(r.data.begin(), r.data.end()));
  return j;
}

namespace {

class RunService {
 public:
  RunService(const ServerOptions& options, p::OutgoingRequests& ide) : options_(options), ide_(ide) {}
  ~RunService() {
    std::map<std::string, std::shared_ptr<Followed>> followed;
    {
      std::lock_guard lock(mutex_);
      followed.swap(followed_);
    }
    for (auto& [id, f] : followed) stop(*f);
    client_.reset();
    if (endpoint_) endpoint_->close();
  }

  std::expected<json, ResponseError> start(const RunStartParams& params) {
    std::lock_guard lock(mutex_);
    auto ready = connect_locked(params.path);
    if (!ready) return std::unexpected(ready.error());
    run::LaunchRequest req;
    req.command = params.argv;
    req.interpreter = config_.interpreter;
    req.config_env = config_.env;
    for (const auto& [k, v] : params.env) req.cli_env.push_back(k + "=" + v);
    req.cwd = params.cwd;
    req.remote_base = remote_base_;
    req.mapping_root = mapping_root_;
    req.tty = params.tty;
    req.cols = params.cols;
    req.rows = params.rows;
    auto spec = run::make_run_spec(req);
    if (!spec) return std::unexpected(ResponseError{p::error_code::kInvalidParams, "run/start: " + spec.error(), {}});
    auto started = client_->start(*spec);
    if (!started) return std::unexpected(started.error());
    follow_locked(started->id, 0);
    return json{{"id", started->id}, {"pid", started->pid}, {"startedAt", started->started_at}, {"argv", spec->argv},
                {"cwd", spec->cwd}};
  }

  std::expected<json, ResponseError> attach(const RunIdParams& params) {
    std::lock_guard lock(mutex_);
    auto ready = connect_locked(std::nullopt);
    if (!ready) return std::unexpected(ready.error());
    // Check the id and offset first, so a bad one is this call's error, not a silent follower.
    auto probe = client_->read(params.id, params.offset, 1);
    if (!probe) return std::unexpected(probe.error());
    if (auto it = followed_.find(params.id); it != followed_.end()) {
      stop(*it->second);
      followed_.erase(it);
    }
    follow_locked(params.id, params.offset);
    return json{{"id", params.id}, {"offset", params.offset}, {"state", probe->state}};
  }

  std::expected<json, ResponseError> detach(const RunIdParams& params) {
    std::shared_ptr<Followed> f;
    {
      std::lock_guard lock(mutex_);
      auto it = followed_.find(params.id);
      if (it == followed_.end()) return json::object();
      f = it->second;
      followed_.erase(it);
    }
    stop(*f);
    std::lock_guard lock(mutex_);
    if (client_) (void)client_->detach(params.id);
    return json::object();
  }

  std::expected<json, ResponseError> input(const RunIdParams& params) {
    std::string data;
    if (params.text) data = *params.text;
    if (params.base64) {
      auto bytes = ssh::base64_decode(*params.base64);
      if (!bytes) return std::unexpected(ResponseError{p::error_code::kInvalidParams, "run/input: base64: " + bytes.error(), {}});
      data.assign(bytes->begin(), bytes->end());
    }
    return with_client([&](run::RunClient& c) { return c.input(params.id, data, params.eof); });
  }

  std::expected<json, ResponseError> signal(const RunIdParams& params) {
    auto n = run::signal_number(params.signal.empty() ? "INT" : params.signal);
    if (!n) return std::unexpected(ResponseError{p::error_code::kInvalidParams, "run/signal: " + n.error(), {}});
    return with_client([&](run::RunClient& c) { return c.signal(params.id, run::signal_name(*n)); });
  }

  std::expected<json, ResponseError> resize(const RunIdParams& params) {
    return with_client([&](run::RunClient& c) { return c.resize(params.id, params.cols, params.rows); });
  }

  std::expected<json, ResponseError> list(const RunListParams& params) {
    std::lock_guard lock(mutex_);
    auto ready = connect_locked(params.path);
    if (!ready) return std::unexpected(ready.error());
    auto runs = client_->list(params.all);
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

 private:
  struct Followed {
    std::unique_ptr<run::RunFollower> follower;
    std::thread thread;
    std::atomic<bool> stop{false};
  };

  template <class Fn>
  std::expected<json, ResponseError> with_client(Fn&& fn) {
    std::lock_guard lock(mutex_);
    auto ready = connect_locked(std::nullopt);
    if (!ready) return std::unexpected(ready.error());
    auto r = fn(*client_);
    if (!r) return std::unexpected(r.error());
    return json::object();
  }

  // The project's endpoint, opened once (again when it went away or the project changed).
  std::expected<void, ResponseError> connect_locked(const std::optional<std::string>& project) {
    auto config = lookup_project(project, options_);
    if (!config) return std::unexpected(config.error());
    const deploy::Mapping& m = config->mappings.front();
    std::string key = config->host + "\n" + m.remote;
    if (endpoint_ && endpoint_->connected() && key == key_) return {};
    for (auto& [id, f] : followed_) stop(*f);
    followed_.clear();
    client_.reset();
    if (endpoint_) endpoint_->close();
    endpoint_.reset();
    remote_base_.clear();
    if (config->host == "local") {
      remote_base_ = sync::mapping_target(*config, m).remote_base;
      endpoint_ = std::make_unique<remote::LocalEndpoint>(sync::local_endpoint_options(*config, m));
    } else {
      auto t = remote::make_ssh_target("", "", std::nullopt, &*config);
      if (!t) return std::unexpected(ResponseError{p::error_code::kProjectInvalid, "run: " + t.error(), {}});
      auto o = remote::ssh_endpoint_options(*t);
      o.on_state = [this](const remote::HostState& s) { link_state(s); };
      endpoint_ = std::make_unique<remote::SshEndpoint>(o);
    }
    auto info = endpoint_->connect();
    if (!info) {
      endpoint_.reset();
      return std::unexpected(info.error());
    }
    key_ = key;
    config_ = *config;
    mapping_root_ = remote_base_.empty() ? info->root : (fs::path(info->root) / remote_base_).string();
    client_ = std::make_unique<run::RunClient>(*endpoint_);
    return {};
  }

  // From the endpoint's threads; never under mutex_ there (a call may hold it waiting on the link).
  void link_state(const remote::HostState& s) {
    std::lock_guard lock(links_mutex_);
    if (s.state == "reconnecting" && !down_) {
      down_ = true;
      for (auto* f : live_) f->link_lost();
    } else if (s.state == "connected" && down_) {
      down_ = false;
      for (auto* f : live_) f->link_restored();
    }
  }

  void follow_locked(const std::string& id, std::uint64_t offset) {
    auto f = std::make_shared<Followed>();
    f->follower = std::make_unique<run::RunFollower>(*client_, id, offset, [this](const run::OutputRecord& r) {
      ide_.notify("run/output", output_notification(r));
    });
    {
      std::lock_guard lock(links_mutex_);
      live_.push_back(f->follower.get());
    }
    f->thread = std::thread([this, f] { follow_loop(*f); });
    followed_[id] = f;
  }

  void follow_loop(Followed& f) {
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
        ide_.notify("run/exited", std::move(j));
        return;
      }
      if (ev == run::RunFollower::Event::failed) {
        ide_.notify("run/exited", json{{"id", follower.id()}, {"status", run::kFerryFailure}, {"error", *follower.failed()}});
        return;
      }
    }
  }

  void stop(Followed& f) {
    f.stop = true;
    if (f.thread.joinable()) f.thread.join();
    std::lock_guard lock(links_mutex_);
    std::erase(live_, f.follower.get());
  }

  const ServerOptions& options_;
  p::OutgoingRequests& ide_;
  std::mutex mutex_;  // guards the endpoint, the client and followed_
  std::unique_ptr<remote::Endpoint> endpoint_;
  std::unique_ptr<run::RunClient> client_;
  std::string key_, remote_base_, mapping_root_;
  deploy::ProjectConfig config_;
  std::map<std::string, std::shared_ptr<Followed>> followed_;

  std::mutex links_mutex_;
  bool down_ = false;
  std::vector<run::RunFollower*> live_;
};

}  // namespace

void bind_run_methods(p::BindingTable& table, const ServerOptions& options, p::OutgoingRequests& ide) {
  auto service = std::make_shared<RunService>(options, ide);
  table.request<RunStartParams, json>(
      "run/start", [service](const RunStartParams& params, p::CallContext&) { return service->start(params); },
      p::Execution::worker);
  table.request<RunIdParams, json>(
      "run/attach", [service](const RunIdParams& params, p::CallContext&) { return service->attach(params); },
      p::Execution::worker);
  table.request<RunIdParams, json>(
      "run/detach", [service](const RunIdParams& params, p::CallContext&) { return service->detach(params); },
      p::Execution::worker);
  table.request<RunIdParams, json>(
      "run/input", [service](const RunIdParams& params, p::CallContext&) { return service->input(params); },
      p::Execution::worker);
  table.request<RunIdParams, json>(
      "run/signal", [service](const RunIdParams& params, p::CallContext&) { return service->signal(params); },
      p::Execution::worker);
  table.request<RunIdParams, json>(
      "run/resize", [service](const RunIdParams& params, p::CallContext&) { return service->resize(params); },
      p::Execution::worker);
  table.request<RunListParams, json>(
      "run/list", [service](const RunListParams& params, p::CallContext&) { return service->list(params); },
      p::Execution::worker);
  table.reserve_name("run/output");
  table.reserve_name("run/exited");
}

}  // namespace ferry::server
