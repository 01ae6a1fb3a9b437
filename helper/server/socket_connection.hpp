// One terminal command's connection to the project socket (socket_methods.cpp): what it asked the
// project's link for that must end with it, and its share of the agent's notifications. A riding
// `ferry run` or `ferry attach` follows its run as follower "socket-N" (run/attach's `follower`):
// that stream's notifications, and the link's state changes, go to this connection only, through
// a queue and a thread of its own, so a terminal that stops reading stalls its own stream, never
// the link: past kPauseBytes queued the stream is detached, and attached again at the next offset
// once the queue drained. When the connection ends (the command finished, was killed, or the
// process stops) its streams are detached, the runs it asked to stop with killOnDisconnect get
// SIGKILL (as the agent does when a helper of its own goes), and its tunnels close.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <expected>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "helper/remote/endpoint.hpp"
#include "helper/remote/forward_spec.hpp"
#include "helper/server/project_session.hpp"
#include "helper/server/output_channel.hpp"

namespace ferry::server {

using ProjectLinkPtr = std::shared_ptr<ProjectLink>;

class SocketConnection {
 public:
  static constexpr std::size_t kPauseBytes = 8u << 20;   // queued: detach the streams
  static constexpr std::size_t kResumeBytes = 1u << 20;  // drained below: attach them again

  // `fd`: the accepted connection (the caller closes it after this goes).
  SocketConnection(std::uint64_t number, int fd);
  ~SocketConnection();  // shuts the socket down, then ends what the command left on the link
  SocketConnection(const SocketConnection&) = delete;
  SocketConnection& operator=(const SocketConnection&) = delete;

  // The connection's one writer: the transport's replies and these notifications.
  OutputChannel& output() { return out_; }

  // One agent request relayed for the command on `link` (the first link used is the
  // connection's; another one later is refused).
  std::expected<protocol::json, protocol::ResponseError> call(const ProjectLinkPtr& link, const std::string& method,
                                                              protocol::json params);
  std::expected<remote::ForwardInfo, protocol::ResponseError> forward(const ProjectLinkPtr& link, const remote::ForwardSpec& spec);
  std::expected<void, protocol::ResponseError> unforward(int id);

 private:
  struct Stream {
    protocol::json attach;     // run/attach's params (offset updated as records go out)
    bool detached = false;     // paused by the queue, or ended
  };
  std::expected<void, protocol::ResponseError> bind(const ProjectLinkPtr& link);
  // run/start with `attach`: the stream is this connection's (its follower), registered for the
  // flow control and the end as run/attach's are.
  std::expected<protocol::json, protocol::ResponseError> start_attached(const ProjectLinkPtr& link, protocol::json params);
  void on_agent_note(const protocol::Notification& note);  // the endpoint's reader thread
  void write_loop(std::stop_token stop);
  void flow_loop(std::stop_token stop);
  void pause_streams();
  void resume_streams();
  void end_on_link();

  const std::string follower_;
  const int fd_;
  OutputChannel out_;
  std::mutex mutex_;
  std::condition_variable_any cv_;
  ProjectLinkPtr link_;
  std::map<std::string, Stream> streams_;  // by run id
  // run/start calls with `attach` in flight: a tagged notification of a run id not known yet is
  // the new run's stream (the agent's reply and its first record race here), made on the spot.
  int starting_ = 0;
  std::set<std::string> kill_on_disconnect_;
  std::set<int> forwards_;
  std::deque<std::pair<std::string, protocol::json>> queue_;  // (method, params) for the terminal
  std::size_t queued_bytes_ = 0;
  bool paused_ = false;
  bool pause_asked_ = false;
  remote::Subscription notes_;  // after the state it feeds: unsubscribed first
  remote::Subscription states_;
  std::jthread writer_;  // last: stopped and joined first
  std::jthread flow_;
};

}  // namespace ferry::server
