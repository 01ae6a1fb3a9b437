// The one table from ferry::Error's kinds to the IDE wire's JSON-RPC error codes
// (protocol/spec/protocol.md, "Error codes"), and back for errors that arrive as codes (an
// endpoint's ResponseError). Every server method turns its engine's Error into a response here.
#pragma once

#include <string_view>

#include "protocol/error.hpp"
#include "protocol/jsonrpc.hpp"

namespace ferry::server {

int error_code_of(ErrorKind kind);
ErrorKind error_kind_of(int code);

// "METHOD: message" with the kind's code (the message as is when `method` is empty).
protocol::ResponseError response_error(const Error& e, std::string_view method = {});
// A ResponseError as an Error (its code's kind), e.g. from the remote layer.
Error error_of(const protocol::ResponseError& e);

}  // namespace ferry::server
