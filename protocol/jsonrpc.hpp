// JSON-RPC 2.0 message model shared by both wires (JSON to the IDE, CBOR to the agent):
// parsing of untrusted input into typed messages, and the error codes ferry answers with.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

namespace ferry::protocol {

using json = nlohmann::json;

namespace error_code {
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kServerNotInitialized = -32002;  // LSP
inline constexpr int kUnknownErrorCode = -32001;      // LSP
inline constexpr int kRequestCancelled = -32800;      // LSP
inline constexpr int kContentModified = -32801;       // LSP
// ferry's own range: -32099 .. -32050 (inside JSON-RPC's server-error range, clear of LSP's).
inline constexpr int kProjectNotFound = -32099;
inline constexpr int kProjectInvalid = -32098;
inline constexpr int kAgentUnavailable = -32097;
inline constexpr int kAgentVersionMismatch = -32096;
inline constexpr int kMessageTooLarge = -32095;
inline constexpr int kIoError = -32094;
// The project's ferry.json is not trusted (docs/security.md): nothing connects, runs or opens.
inline constexpr int kProjectUntrusted = -32093;
// Another `ferry serve` serves the project (server/serve_claims.hpp): this one defers to it.
inline constexpr int kServedElsewhere = -32092;
}  // namespace error_code

struct ResponseError {
  int code = error_code::kInternalError;
  std::string message;
  std::optional<json> data;
};

// Request ids are numbers or strings; null only appears in error responses to unparseable input.
using RequestId = json;

struct Request {
  RequestId id;
  std::string method;
  json params;  // object, array, or null when absent
};

struct Notification {
  std::string method;
  json params;
};

struct Response {
  RequestId id;  // null when the request could not be identified
  std::variant<json, ResponseError> outcome;  // result or error
  bool ok() const { return outcome.index() == 0; }
};

using Message = std::variant<Request, Notification, Response>;

// Validates one JSON-RPC message object. On failure the error carries the id when one could be
// read, so the caller can answer it.
struct InvalidMessage {
  RequestId id;
  ResponseError error;
};
std::expected<Message, InvalidMessage> parse_message(const json& j);
std::expected<Message, InvalidMessage> parse_message(json&& j);  // params and results moved out

json to_json(const Request& r);
json to_json(const Notification& n);
json to_json(const Response& r);
json to_json(const Message& m);
// The same, moving params and results instead of copying them (agent frames carry megabytes).
json to_json(Message&& m);
json to_json(const ResponseError& e);

Response make_error(RequestId id, int code, std::string message, std::optional<json> data = std::nullopt);
Response make_result(RequestId id, json result);

}  // namespace ferry::protocol
