// The dispatch state machine: see dispatcher.hpp.
#include "protocol/dispatcher.hpp"

#include <memory>
#include <optional>
#include <vector>

#include "protocol/messages.hpp"

namespace ferry::protocol {
namespace {

// Collects the responses of one batch and sends them as one array when the last arrives
// (JSON-RPC 2.0 §6). A guard count keeps it from sending before every element was handled.
struct BatchCollector {
  std::mutex mutex;
  std::vector<json> responses;
  std::size_t outstanding = 0;
};

void finish_batch_element(const std::shared_ptr<BatchCollector>& batch, std::optional<json> response,
                          const std::function<void(const json&)>& send) {
  json out;
  {
    std::lock_guard lock(batch->mutex);
    if (response) batch->responses.push_back(std::move(*response));
    if (--batch->outstanding != 0 || batch->responses.empty()) return;
    out = json(std::move(batch->responses));
  }
  send(out);
}

std::string describe_id(const json& id) { return id.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

Dispatcher::Dispatcher(const BindingTable& table, DispatcherHooks hooks, DispatcherOptions options)
    : table_(table), hooks_(std::move(hooks)), options_(options) {}

void Dispatcher::log(LogLevel level, const std::string& message) const {
  if (hooks_.log) hooks_.log(level, message);
}

void Dispatcher::notify(const std::string& method, json params) {
  if (hooks_.send) hooks_.send(to_json(Notification{method, std::move(params)}));
}

void Dispatcher::cancel_all() {
  std::lock_guard lock(pending_mutex_);
  for (auto& [_, source] : pending_) source.cancel();
}

bool Dispatcher::wait_idle(std::chrono::steady_clock::duration timeout) const {
  std::unique_lock lock(pending_mutex_);
  return idle_cv_.wait_for(lock, timeout, [&] { return pending_.empty(); });
}

std::size_t Dispatcher::in_flight() const {
  std::lock_guard lock(pending_mutex_);
  return pending_.size();
}

void Dispatcher::handle_body(std::string_view body) {
  auto value = decode_body(body, options_.encoding);
  if (!value) {
    log(LogLevel::warn, "unparseable message: " + value.error());
    if (hooks_.send) hooks_.send(to_json(make_error(nullptr, error_code::kParseError, "parse error: " + value.error())));
    return;
  }
  handle_value(std::move(*value));
}

void Dispatcher::handle_value(json value) {
  try {
    if (!value.is_array()) {
      handle_one(std::move(value), [this](json r) {
        if (hooks_.send) hooks_.send(r);
      });
      return;
    }
    if (value.empty()) {
      if (hooks_.send)
        hooks_.send(to_json(make_error(nullptr, error_code::kInvalidRequest, "invalid request: empty batch")));
      return;
    }
    auto batch = std::make_shared<BatchCollector>();
    batch->outstanding = value.size() + 1;
    auto send = [this](const json& m) {
      if (hooks_.send) hooks_.send(m);
    };
    for (auto& element : value) {
      bool answers = handle_one(std::move(element), [batch, send](json r) { finish_batch_element(batch, std::move(r), send); });
      if (!answers) finish_batch_element(batch, std::nullopt, send);
    }
    finish_batch_element(batch, std::nullopt, send);
  } catch (const std::exception& e) {
    log(LogLevel::error, std::string("dropping a message that failed dispatch: ") + e.what());
  }
}

bool Dispatcher::handle_one(json&& value, const Deliver& deliver) {
  auto message = parse_message(std::move(value));
  if (!message) {
    deliver(to_json(make_error(message.error().id, message.error().error.code,
                               "invalid request: " + message.error().error.message)));
    return true;
  }
  if (auto* req = std::get_if<Request>(&*message)) {
    handle_request(std::move(*req), deliver);
    return true;
  }
  if (auto* note = std::get_if<Notification>(&*message)) {
    handle_notification(std::move(*note));
    return false;
  }
  const auto& response = std::get<Response>(*message);
  if (hooks_.on_response && hooks_.on_response(response)) return false;
  log(LogLevel::debug, "ignoring a response to id " + describe_id(response.id) + ": no request of ours has that id");
  return false;
}

std::expected<json, ResponseError> Dispatcher::run_request(const MethodEntry& entry, const json& params,
                                                           CallContext& ctx) {
  std::expected<json, ResponseError> out;
  try {
    out = entry.request(params, ctx);
  } catch (const std::exception& e) {
    log(LogLevel::error, "handler for " + entry.name + " threw: " + e.what());
    out = std::unexpected(ResponseError{error_code::kInternalError, "internal error in " + entry.name + ": " + e.what(), {}});
  } catch (...) {
    out = std::unexpected(ResponseError{error_code::kInternalError, "internal error in " + entry.name, {}});
  }
  // LSP leaves the answer to a cancelled request open; answering -32800 consistently lets the
  // client drop its bookkeeping without racing the handler's own result.
  if (ctx.cancelled()) out = std::unexpected(cancelled_error(entry.name));
  return out;
}

void Dispatcher::handle_request(Request req, const Deliver& deliver) {
  const std::string& m = req.method;
  auto fail = [&](ResponseError e) { deliver(to_json(Response{req.id, std::move(e)})); };

  if (options_.lsp_lifecycle) {
    Lifecycle state = lifecycle_.load();
    bool is_initialize = m == method::kInitialize;
    if (state == Lifecycle::uninitialized && !is_initialize)
      return fail({error_code::kServerNotInitialized, "server not initialized: send initialize before " + m, {}});
    if (state == Lifecycle::shutting_down || state == Lifecycle::exited)
      return fail({error_code::kInvalidRequest, "server is shutting down: " + m + " refused after shutdown", {}});
    if (state != Lifecycle::uninitialized && is_initialize)
      return fail({error_code::kInvalidRequest, "initialize was already received", {}});
  }
  const MethodEntry* entry = table_.find(m);
  if (!entry || entry->is_notification) return fail({error_code::kMethodNotFound, "method not found: " + m, {}});

  json work_done_token;
  if (auto e = read_work_done_token(req.params, work_done_token)) return fail(invalid_params_error(m, *e));

  std::string key = describe_id(req.id);
  CancellationSource source;
  {
    std::lock_guard lock(pending_mutex_);
    if (!pending_.emplace(key, source).second)
      return fail({error_code::kInvalidRequest, "request id " + key + " is already in flight", {}});
  }
  if (options_.lsp_lifecycle && m == method::kShutdown) {
    shutdown_received_ = true;
    lifecycle_ = Lifecycle::shutting_down;
  }

  ReplyOnce reply(
      req.id, m,
      [this, key, deliver](json response) {
        // Forget the id before answering, so the client may reuse it as soon as it sees the
        // answer. The pool drains this task before the transport ends, so the write still lands.
        {
          std::lock_guard lock(pending_mutex_);
          pending_.erase(key);
        }
        idle_cv_.notify_all();
        deliver(std::move(response));
      },
      [this](const std::string& what) { log(LogLevel::error, what); });
  CallContext ctx(m, req.id, source.token(), std::move(work_done_token),
                  [this](const std::string& method, json params) { notify(method, std::move(params)); });

  // initialize always runs inline: the lifecycle must have moved on before the next message.
  const bool lifecycle_step = options_.lsp_lifecycle && m == method::kInitialize;
  if (!hooks_.schedule && (entry->execution == Execution::inline_ || !hooks_.post || lifecycle_step)) {
    auto out = run_request(*entry, req.params, ctx);
    if (lifecycle_step && out) lifecycle_ = Lifecycle::running;
    reply(std::move(out));
    return;
  }

  // std::function needs a copyable callable; the task's move-only parts live on the heap.
  struct Task {
    const MethodEntry* entry;
    json params;
    CallContext ctx;
    ReplyOnce reply;
  };
  auto task = std::make_shared<Task>(Task{entry, std::move(req.params), std::move(ctx), std::move(reply)});
  auto run = [this, task, lifecycle_step] {
    if (task->ctx.cancelled()) {
      task->reply(std::unexpected(cancelled_error(task->entry->name)));
      return;
    }
    auto out = run_request(*task->entry, task->params, task->ctx);
    if (lifecycle_step && out) lifecycle_ = Lifecycle::running;
    task->reply(std::move(out));
  };
  if (lifecycle_step) return run();
  if (hooks_.schedule) return hooks_.schedule(m, task->params, entry->execution, std::move(run));
  hooks_.post(std::move(run));
}

void Dispatcher::run_notification(const MethodEntry& entry, const json& params) {
  CallContext ctx(entry.name, nullptr, CancellationToken{}, nullptr,
                  [this](const std::string& method, json p) { notify(method, std::move(p)); });
  try {
    if (auto e = entry.notification(params, ctx))
      log(LogLevel::warn, "invalid params for " + entry.name + ": " + e->to_string());
  } catch (const std::exception& e) {
    log(LogLevel::error, "notification handler for " + entry.name + " threw: " + e.what());
  } catch (...) {
    log(LogLevel::error, "notification handler for " + entry.name + " threw");
  }
}

void Dispatcher::handle_notification(Notification note) {
  const std::string& m = note.method;
  if (m == method::kCancelRequest) {
    CancelParams p;
    if (auto e = from_json(note.params, p)) {
      log(LogLevel::warn, "invalid params for $/cancelRequest: " + e->to_string());
      return;
    }
    std::lock_guard lock(pending_mutex_);
    if (auto it = pending_.find(describe_id(p.id)); it != pending_.end()) it->second.cancel();
    return;
  }
  if (options_.lsp_lifecycle) {
    if (m == method::kExit) {
      lifecycle_ = Lifecycle::exited;
      if (hooks_.on_exit) hooks_.on_exit(shutdown_received_ ? 0 : 1);
      return;
    }
    Lifecycle state = lifecycle_.load();
    if (state != Lifecycle::running) {
      // LSP: notifications before initialize and after shutdown are dropped.
      log(LogLevel::debug, "dropping notification " + m + " outside the running state");
      return;
    }
  }
  const MethodEntry* entry = table_.find(m);
  if (!entry || !entry->is_notification) {
    // "$/" notifications are optional by LSP convention; others are worth a line in the log.
    if (!m.starts_with("$/")) log(LogLevel::warn, "ignoring unknown notification " + m);
    return;
  }
  if (entry->execution == Execution::inline_ || !hooks_.post) {
    run_notification(*entry, note.params);
    return;
  }
  auto params = std::make_shared<json>(std::move(note.params));
  hooks_.post([this, entry, params] { run_notification(*entry, *params); });
}

}  // namespace ferry::protocol
