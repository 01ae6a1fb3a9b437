// JSON-RPC 2.0 message parsing and serialisation: see jsonrpc.hpp.
#include "protocol/jsonrpc.hpp"

namespace ferry::protocol {
namespace {

std::unexpected<InvalidMessage> invalid(RequestId id, std::string msg) {
  return std::unexpected(InvalidMessage{std::move(id), ResponseError{error_code::kInvalidRequest, std::move(msg), {}}});
}

bool valid_id(const json& id) { return id.is_string() || id.is_number_integer() || id.is_number_unsigned(); }

}  // namespace

std::expected<Message, InvalidMessage> parse_message(const json& j) { return parse_message(json(j)); }

std::expected<Message, InvalidMessage> parse_message(json&& j) {
  if (!j.is_object()) return invalid(nullptr, "a JSON-RPC message must be an object");
  RequestId id = nullptr;
  auto id_it = j.find("id");
  if (id_it != j.end()) {
    if (!valid_id(*id_it) && !id_it->is_null())
      return invalid(nullptr, "\"id\" must be a string or an integer");
    id = *id_it;
  }
  auto ver = j.find("jsonrpc");
  if (ver == j.end() || !ver->is_string() || ver->get<std::string>() != "2.0")
    return invalid(id, "\"jsonrpc\" must be \"2.0\"");

  auto method_it = j.find("method");
  if (method_it != j.end()) {
    if (!method_it->is_string()) return invalid(id, "\"method\" must be a string");
    json params = nullptr;
    // A null "params" is taken as none: eglot 1.9 sends one with shutdown and exit, and refusing
    // it left ferry serve killed without its shutdown.
    if (auto p = j.find("params"); p != j.end() && !p->is_null()) {
      if (!p->is_object() && !p->is_array()) return invalid(id, "\"params\" must be an object or an array");
      params = std::move(*p);
    }
    if (id_it == j.end()) return Notification{method_it->get<std::string>(), std::move(params)};
    if (id.is_null()) return invalid(nullptr, "a request \"id\" must not be null");
    return Request{std::move(id), method_it->get<std::string>(), std::move(params)};
  }

  // A response.
  if (id_it == j.end()) return invalid(nullptr, "message has neither \"method\" nor \"id\"");
  auto res = j.find("result");
  auto err = j.find("error");
  if ((res == j.end()) == (err == j.end()))
    return invalid(id, "a response must have exactly one of \"result\" and \"error\"");
  if (res != j.end()) return Response{std::move(id), std::move(*res)};
  if (!err->is_object() || !err->contains("code") || !(*err)["code"].is_number_integer() ||
      !err->contains("message") || !(*err)["message"].is_string())
    return invalid(id, "\"error\" must be an object with an integer \"code\" and a string \"message\"");
  ResponseError e{(*err)["code"].get<int>(), (*err)["message"].get<std::string>(), std::nullopt};
  if (auto d = err->find("data"); d != err->end()) e.data = std::move(*d);
  return Response{std::move(id), std::move(e)};
}

json to_json(const ResponseError& e) {
  json j{{"code", e.code}, {"message", e.message}};
  if (e.data) j["data"] = *e.data;
  return j;
}

// Each message kind is built once, from a message the caller gives up (params and results are
// moved); the const overloads copy the message first.
namespace {

json from(Request&& r) {
  json j{{"jsonrpc", "2.0"}, {"id", std::move(r.id)}, {"method", std::move(r.method)}};
  if (!r.params.is_null()) j["params"] = std::move(r.params);
  return j;
}

json from(Notification&& n) {
  json j{{"jsonrpc", "2.0"}, {"method", std::move(n.method)}};
  if (!n.params.is_null()) j["params"] = std::move(n.params);
  return j;
}

json from(Response&& r) {
  json j{{"jsonrpc", "2.0"}, {"id", std::move(r.id)}};
  if (r.ok())
    j["result"] = std::move(std::get<json>(r.outcome));
  else
    j["error"] = to_json(std::get<ResponseError>(r.outcome));
  return j;
}

}  // namespace

json to_json(const Request& r) { return from(Request(r)); }
json to_json(const Notification& n) { return from(Notification(n)); }
json to_json(const Response& r) { return from(Response(r)); }

json to_json(const Message& m) {
  return std::visit([](const auto& x) { return to_json(x); }, m);
}

json to_json(Message&& m) {
  return std::visit([](auto& x) { return from(std::move(x)); }, m);
}

Response make_error(RequestId id, int code, std::string message, std::optional<json> data) {
  return Response{std::move(id), ResponseError{code, std::move(message), std::move(data)}};
}

Response make_result(RequestId id, json result) { return Response{std::move(id), std::move(result)}; }

}  // namespace ferry::protocol
