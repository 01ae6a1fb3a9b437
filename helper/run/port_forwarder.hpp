// Ports that forward themselves (docs/runs.md, "Ports a run opens"): the agent says which ports a
// followed run's processes listen on (run/port); a PortForwarder opens a tunnel to each from this
// machine's loopback (the same port number when it is free here, else any free one), closes it when
// the listener goes, and says where (`announce`). ferry.json's `autoForwardPorts` turns it off or
// keeps it to listed ports. Events come on the endpoint's reader thread, which must never call the
// endpoint: they are queued and handled on the forwarder's own thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "helper/deploy/project_config.hpp"
#include "helper/remote/endpoint.hpp"
#include "helper/run/run_client.hpp"

namespace ferry::run {

// What a forward looks like to the person: the box's port and where it is here.
struct PortForward {
  int remote_port = 0;
  int local_port = 0;
  std::string url;  // http://127.0.0.1:PORT
  int forward_id = 0;
};

// "ferry: port 8000 on the box → http://127.0.0.1:8000" and its closing and failing forms.
std::string describe_port_event(const PortEvent& event, const std::optional<PortForward>& forward, const std::string& error);

class PortForwarder {
 public:
  // Called on the forwarder's thread: an opened forward (or the error), or a closed one.
  using Announce = std::function<void(const PortEvent& event, const std::optional<PortForward>& forward, const std::string& error)>;

  // `same_machine`: the run is on this machine (the `local` host): its ports are here already, so
  // they are only announced.
  PortForwarder(remote::Endpoint& endpoint, deploy::AutoForwardPorts policy, bool same_machine, Announce announce);
  ~PortForwarder();  // closes what it opened
  PortForwarder(const PortForwarder&) = delete;
  PortForwarder& operator=(const PortForwarder&) = delete;

  // Whether ports are wanted at all (run/attach's `ports`).
  bool enabled() const { return policy_.enabled; }
  // Any thread; never blocks on the endpoint.
  void on_port(PortEvent event);

 private:
  void loop();
  void handle(const PortEvent& event);

  remote::Endpoint& endpoint_;
  deploy::AutoForwardPorts policy_;
  bool same_machine_;
  Announce announce_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<PortEvent> queue_;
  bool stopping_ = false;
  std::map<std::pair<std::string, int>, PortForward> open_;  // by (run id, box port)
  std::thread thread_;
};

}  // namespace ferry::run
