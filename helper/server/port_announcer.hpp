// The editor's side of ports that forward themselves (helper/run/port_forwarder.hpp): each forward
// of a run the server follows is a message with an action that opens it in the browser
// (window/showMessageRequest, then window/showDocument with external: true); a forward that ends
// or fails is a line in the log. The person may never answer: each question waits on a thread of
// its own, cancelled and joined when the run's following ends.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "helper/run/port_forwarder.hpp"
#include "helper/server/server_context.hpp"
#include "protocol/cancellation.hpp"

namespace ferry::server {

class PortAnnouncer {
 public:
  // `what`: how the run is named to the person ("main.py").
  PortAnnouncer(const ServerContext& ctx, std::string what) : ctx_(ctx), what_(std::move(what)) {}
  ~PortAnnouncer();
  PortAnnouncer(const PortAnnouncer&) = delete;
  PortAnnouncer& operator=(const PortAnnouncer&) = delete;

  // PortForwarder's Announce.
  void announce(const run::PortEvent& event, const std::optional<run::PortForward>& forward, const std::string& error);

 private:
  void offer_browser(const std::string& message, const std::string& url);

  const ServerContext& ctx_;
  std::string what_;
  protocol::CancellationSource cancel_;
  std::mutex mutex_;
  std::vector<std::thread> asking_;
};

}  // namespace ferry::server
