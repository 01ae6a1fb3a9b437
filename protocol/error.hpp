// ferry::Error: one error type with a kind, for every layer (engines, remote, server, CLI). The
// kind says what went wrong in terms a caller can act on. The one table from kinds to the IDE
// wire's JSON-RPC codes and back is here (error.cpp), so an engine turns an endpoint's
// ResponseError into its kind without depending on the server; helper/server/error_codes.hpp
// makes responses from it, and the CLI maps kinds to its exit codes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace ferry {

namespace protocol {
struct ResponseError;
}

// One kind per thing the caller does differently; a sync conflict is not an error (it is
// reported in the result, and nothing is overwritten).
enum class ErrorKind {
  invalid_input,      // the request or its arguments are wrong: fix them and retry
  project_not_found,  // no ferry.json where the request pointed
  invalid_project,    // ferry.json failed validation
  agent_lost,         // the agent could not be reached, or went away mid-operation (the link is down)
  version_mismatch,   // the agent speaks another protocol version
  too_large,          // a message over the size limit
  io,                 // a local or remote I/O failure (disk full, permission, a failed write)
  debugpy_missing,    // debugpy is not importable by the box's interpreter
  untrusted,          // the project's ferry.json is not trusted: the person must say so first
  cancelled,          // the caller cancelled
  internal,           // a bug
};

std::string_view to_string(ErrorKind kind);

struct Error {
  Error() = default;
  Error(ErrorKind k, std::string m, std::optional<nlohmann::json> d = std::nullopt)
      : kind(k), message(std::move(m)), data(std::move(d)) {}

  ErrorKind kind = ErrorKind::internal;
  std::string message;                  // says what happened and how to fix it
  std::optional<nlohmann::json> data;   // structured detail for the IDE (a pointer, a path)
};

// The kind's JSON-RPC code (protocol/spec/protocol.md, "Error codes") and back; a code no kind
// has is internal.
int error_code_of(ErrorKind kind);
ErrorKind error_kind_of(int code);

// A ResponseError (an endpoint's, an agent's) as an Error of its code's kind.
Error error_of(const protocol::ResponseError& e);
// Its kind under an engine's own words about it (the data stays behind: it described the
// agent's message, not this one).
Error error_of(const protocol::ResponseError& e, std::string message);

}  // namespace ferry
