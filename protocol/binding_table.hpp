// The typed binding table: the one place that names every method a server accepts. Handlers
// take typed Params and return typed Results (or a ResponseError); the table decodes params
// with JSON-pointer errors (-32602) and encodes results, so handlers never touch raw JSON.
#pragma once

#include <concepts>
#include <expected>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/cancellation.hpp"
#include "protocol/jsonrpc.hpp"
#include "protocol/json_reader.hpp"
#include "protocol/progress.hpp"

namespace ferry::protocol {

// Where a handler runs. Inline handlers run on the reading thread and must be quick (no
// blocking I/O); worker handlers run on the transport's pool so reading, and with it
// $/cancelRequest, goes on while they work.
enum class Execution { inline_, worker };

// What a handler may use besides its params.
class CallContext {
 public:
  using Notify = std::function<void(const std::string& method, json params)>;

  CallContext(std::string method, RequestId id, CancellationToken token, json work_done_token, Notify notify)
      : method_(std::move(method)),
        id_(std::move(id)),
        token_(std::move(token)),
        work_done_token_(std::move(work_done_token)),
        notify_(std::move(notify)) {}

  const std::string& method() const { return method_; }
  const RequestId& id() const { return id_; }  // null for notifications
  const CancellationToken& cancellation() const { return token_; }
  bool cancelled() const { return token_.cancelled(); }

  // Progress on the client's workDoneToken (a no-op reporter when it sent none).
  WorkDoneProgress progress() const { return WorkDoneProgress(work_done_token_, notify_); }
  bool has_work_done_token() const { return !work_done_token_.is_null(); }
  // A server-to-client notification (run/output, train/metrics, ...).
  void notify(const std::string& method, json params) const {
    if (notify_) notify_(method, std::move(params));
  }

 private:
  std::string method_;
  RequestId id_;
  CancellationToken token_;
  json work_done_token_;
  Notify notify_;
};

// The error a handler returns when it notices cancellation.
ResponseError cancelled_error(std::string_view method);
// "invalid params for M: /pointer: message", data {pointer}.
ResponseError invalid_params_error(std::string_view method, const DecodeError& e);

template <class P>
concept DecodableParams = std::default_initializable<P> && requires(const json& j, P& p, const std::string& s) {
  { from_json(j, p, s) } -> std::same_as<std::optional<DecodeError>>;
};

// Results already shaped as JSON (e.g. a config the deploy layer serialises).
inline json to_json(const json& j) { return j; }

template <class R>
concept EncodableResult = requires(const R& r) {
  { to_json(r) } -> std::convertible_to<json>;
};

struct MethodEntry {
  std::string name;
  bool is_notification = false;
  Execution execution = Execution::inline_;
  // Requests: decoded params in, encoded result or error out.
  std::function<std::expected<json, ResponseError>(const json& params, CallContext& ctx)> request;
  // Notifications: a decode error is returned for the log (there is no one to answer).
  std::function<std::optional<DecodeError>(const json& params, CallContext& ctx)> notification;
};

class BindingTable {
 public:
  template <DecodableParams P, EncodableResult R>
  using RequestHandler = std::function<std::expected<R, ResponseError>(const P&, CallContext&)>;
  template <DecodableParams P>
  using NotificationHandler = std::function<void(const P&, CallContext&)>;

  // Binds a request. Rebinding a name replaces the earlier handler.
  template <DecodableParams P, EncodableResult R>
  void request(std::string_view name, RequestHandler<P, R> fn, Execution execution = Execution::inline_) {
    MethodEntry e;
    e.name = std::string(name);
    e.execution = execution;
    e.request = [method = e.name, fn = std::move(fn)](const json& params,
                                                     CallContext& ctx) -> std::expected<json, ResponseError> {
      P p{};
      // vscode-jsonrpc sends `[]` for a request without params: as good as none.
      const bool none = params.is_array() && params.empty();
      if (params.is_array() && !none)
        return std::unexpected(invalid_params_error(method, DecodeError{"", "expected an object, not an array"}));
      // A reference, not `none ? json() : params` (a copy of megabytes of sync data). Params
      // types may keep pointers into it for the call (the agent's raw adapter does).
      static const json kNone;
      if (auto err = from_json(none ? kNone : params, p, ""))
        return std::unexpected(invalid_params_error(method, *err));
      auto r = fn(p, ctx);
      if (!r) return std::unexpected(std::move(r.error()));
      return json(to_json(std::move(*r)));  // a result that holds bytes gives them up
    };
    entries_[e.name] = std::move(e);
  }

  template <DecodableParams P>
  void notification(std::string_view name, NotificationHandler<P> fn, Execution execution = Execution::inline_) {
    MethodEntry e;
    e.name = std::string(name);
    e.is_notification = true;
    e.execution = execution;
    e.notification = [fn = std::move(fn)](const json& params, CallContext& ctx) -> std::optional<DecodeError> {
      P p{};
      const bool none = params.is_array() && params.empty();
      if (params.is_array() && !none) return DecodeError{"", "expected an object, not an array"};
      if (auto err = from_json(none ? json() : params, p, "")) return err;
      fn(p, ctx);
      return std::nullopt;
    };
    entries_[e.name] = std::move(e);
  }

  // Names handled by the dispatcher itself ($/cancelRequest, exit) join the list so
  // capabilities can advertise them.
  void reserve_name(std::string_view name) { reserved_.emplace_back(name); }

  const MethodEntry* find(std::string_view name) const;
  std::vector<std::string> method_names() const;  // sorted, bound and reserved

 private:
  std::map<std::string, MethodEntry, std::less<>> entries_;
  std::vector<std::string> reserved_;
};

}  // namespace ferry::protocol
