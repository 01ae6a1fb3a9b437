// ErrorKind's names and its one table of JSON-RPC codes: see error.hpp.
#include "protocol/error.hpp"

#include <array>

#include "protocol/jsonrpc.hpp"

namespace ferry {

namespace {

namespace ec = protocol::error_code;

// debug/prepare's: debugpy is not importable on the box (ferry's range, see protocol.md).
constexpr int kDebugpyMissing = -32090;

constexpr std::array<std::pair<ErrorKind, int>, 11> kCodes{{
    {ErrorKind::invalid_input, ec::kInvalidParams},
    {ErrorKind::project_not_found, ec::kProjectNotFound},
    {ErrorKind::invalid_project, ec::kProjectInvalid},
    {ErrorKind::agent_lost, ec::kAgentUnavailable},
    {ErrorKind::version_mismatch, ec::kAgentVersionMismatch},
    {ErrorKind::too_large, ec::kMessageTooLarge},
    {ErrorKind::io, ec::kIoError},
    {ErrorKind::debugpy_missing, kDebugpyMissing},
    {ErrorKind::untrusted, ec::kProjectUntrusted},
    {ErrorKind::cancelled, ec::kRequestCancelled},
    {ErrorKind::internal, ec::kInternalError},
}};

}  // namespace

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_input: return "invalid_input";
    case ErrorKind::project_not_found: return "project_not_found";
    case ErrorKind::invalid_project: return "invalid_project";
    case ErrorKind::agent_lost: return "agent_lost";
    case ErrorKind::version_mismatch: return "version_mismatch";
    case ErrorKind::too_large: return "too_large";
    case ErrorKind::io: return "io";
    case ErrorKind::debugpy_missing: return "debugpy_missing";
    case ErrorKind::untrusted: return "untrusted";
    case ErrorKind::cancelled: return "cancelled";
    case ErrorKind::internal: break;
  }
  return "internal";
}

int error_code_of(ErrorKind kind) {
  for (const auto& [k, code] : kCodes)
    if (k == kind) return code;
  return ec::kInternalError;
}

ErrorKind error_kind_of(int code) {
  for (const auto& [k, c] : kCodes)
    if (c == code) return k;
  return ErrorKind::internal;
}

Error error_of(const protocol::ResponseError& e) { return Error{error_kind_of(e.code), e.message, e.data}; }

Error error_of(const protocol::ResponseError& e, std::string message) { return Error{error_kind_of(e.code), std::move(message)}; }

}  // namespace ferry
