// ferry::Error: one error type with a kind, for every layer (engines, remote, server, CLI). The
// kind says what went wrong in terms a caller can act on; helper/server/error_codes.hpp maps it
// to the IDE wire's JSON-RPC codes in one table, and the CLI to its exit codes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace ferry {

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

}  // namespace ferry
