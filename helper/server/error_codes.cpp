// An Error as a JSON-RPC error response: see error_codes.hpp.
#include "helper/server/error_codes.hpp"

#include <utility>

namespace ferry::server {

protocol::ResponseError response_error(const Error& e, std::string_view method) {
  std::string message = method.empty() ? e.message : std::string(method) + ": " + e.message;
  return protocol::ResponseError{error_code_of(e.kind), std::move(message), e.data};
}

}  // namespace ferry::server
