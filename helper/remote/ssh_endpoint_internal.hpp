// Private to SshEndpoint's files (ssh_endpoint.cpp, ssh_agent_install.cpp): the error that every
// failure to reach, install or start the agent is reported as.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "helper/remote/endpoint.hpp"

namespace ferry::remote::detail {

inline ResponseError unavailable(std::string message, std::optional<json> data = std::nullopt) {
  return ResponseError{protocol::error_code::kAgentUnavailable, std::move(message), std::move(data)};
}

}  // namespace ferry::remote::detail
