// An OpenSshLaneSpec for a made-up host, shared by the unit tests of OpenSSH lanes and the tunnel
// master (they read the argv it gives). Header-only.
#pragma once

#include "helper/remote/openssh_lane.hpp"

namespace ferry::test {

inline remote::OpenSshLaneSpec example_lane_spec() {
  remote::OpenSshLaneSpec s;
  s.ssh = "/usr/bin/ssh";
  s.host.alias = "gpu";
  s.host.hostname = "10.0.0.7";
  s.host.user = "ml";
  s.host.port = 2222;
  s.known_hosts = "/tmp/ferry-lane-x/known_hosts";
  return s;
}

}  // namespace ferry::test
