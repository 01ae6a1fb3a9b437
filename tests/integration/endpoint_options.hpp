// What the SshEndpoint tests over the sshd fixture share: endpoint options that reach the fixture
// with only its own key and this build's agent, and a log of the link's state changes that a test
// can wait on (with a deadline). Header-only.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "helper/remote/ssh_endpoint.hpp"
#include "tests/integration/sshd_fixture.hpp"

namespace ferry::test {

struct StateLog {
  std::mutex m;
  std::condition_variable cv;
  std::vector<remote::HostState> states;
  void operator()(const remote::HostState& s) {
    std::lock_guard lk(m);
    states.push_back(s);
    cv.notify_all();
  }
  // True once `state` is reported at index `after` or later.
  bool wait_for(const std::string& state, std::size_t after, std::chrono::milliseconds timeout) {
    std::unique_lock lk(m);
    return cv.wait_for(lk, timeout, [&] {
      for (std::size_t i = after; i < states.size(); ++i)
        if (protocol::to_string(states[i].state) == state) return true;
      return false;
    });
  }
  std::size_t size() {
    std::lock_guard lk(m);
    return states.size();
  }
};

// `log` (kept by reference) receives every state change.
inline remote::SshEndpointOptions endpoint_options_for(const SshdFixture& f, StateLog* log = nullptr) {
  using namespace std::chrono_literals;
  remote::SshEndpointOptions o;
  o.host = f.alias();
  o.ssh_config = f.ssh_config().string();
  o.remote_root = "~/project";
  o.agent_binary = FERRY_AGENT_PATH;
  o.session.agent_socket = "";
  o.session.connect_timeout = 3s;
  o.round_trip_memory = f.dir() / "round-trips.json";  // the test's own, not the user's cache
  if (log) o.on_state = std::ref(*log);
  return o;
}

}  // namespace ferry::test
