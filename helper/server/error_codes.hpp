// Every server method turns its engine's Error into a JSON-RPC error response here, by the one
// table from kinds to codes (protocol/error.hpp, where the engines find it too).
#pragma once

#include <string_view>

#include "protocol/error.hpp"
#include "protocol/jsonrpc.hpp"

namespace ferry::server {

using ferry::error_code_of;
using ferry::error_kind_of;
using ferry::error_of;

// "METHOD: message" with the kind's code (the message as is when `method` is empty).
protocol::ResponseError response_error(const Error& e, std::string_view method = {});

}  // namespace ferry::server
