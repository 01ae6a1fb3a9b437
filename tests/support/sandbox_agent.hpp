// The real ferry-agent as a child process (a LocalEndpoint, no SSH) rooted at a sandbox
// directory, connected: what the sync and agent unit tests push to and pull from. Header-only.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "helper/remote/local_endpoint.hpp"

namespace ferry::test {

// Fails the test (BOOST_REQUIRE) when the agent does not start and answer its handshake.
inline std::unique_ptr<remote::LocalEndpoint> connect_sandbox_agent(const std::filesystem::path& agent,
                                                                    const std::filesystem::path& root,
                                                                    std::vector<std::string> agent_args = {}) {
  remote::LocalEndpointOptions o;
  o.agent = agent;
  o.root = root;
  o.agent_args = std::move(agent_args);
  auto ep = std::make_unique<remote::LocalEndpoint>(o);
  auto info = ep->connect();
  BOOST_REQUIRE_MESSAGE(info.has_value(), "ferry-agent at " << root << ": " << (info ? "" : info.error().message));
  return ep;
}

}  // namespace ferry::test
