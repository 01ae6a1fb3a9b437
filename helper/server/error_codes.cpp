// ErrorKind <-> JSON-RPC code: see error_codes.hpp.
#include "helper/server/error_codes.hpp"

#include <array>
#include <utility>

namespace ferry::server {

namespace ec = protocol::error_code;

namespace {

// debug/prepare's: debugpy is not importable on the box (ferry's range, see protocol.md).
constexpr int kDebugpyMissing = -32090;

constexpr std::array<std::pair<ErrorKind, int>, 10> kCodes{{
    {ErrorKind::invalid_input, ec::kInvalidParams},
    {ErrorKind::project_not_found, ec::kProjectNotFound},
    {ErrorKind::invalid_project, ec::kProjectInvalid},
    {ErrorKind::agent_lost, ec::kAgentUnavailable},
    {ErrorKind::version_mismatch, ec::kAgentVersionMismatch},
    {ErrorKind::too_large, ec::kMessageTooLarge},
    {ErrorKind::io, ec::kIoError},
    {ErrorKind::debugpy_missing, kDebugpyMissing},
    {ErrorKind::cancelled, ec::kRequestCancelled},
    {ErrorKind::internal, ec::kInternalError},
}};

}  // namespace

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

protocol::ResponseError response_error(const Error& e, std::string_view method) {
  std::string message = method.empty() ? e.message : std::string(method) + ": " + e.message;
  return protocol::ResponseError{error_code_of(e.kind), std::move(message), e.data};
}

Error error_of(const protocol::ResponseError& e) { return Error{error_kind_of(e.code), e.message, e.data}; }

}  // namespace ferry::server
