// The helper's end of the agent wire over any ByteStream: the magic-line handshake, then
// JSON-RPC over CBOR frames with many requests in flight, matched by id on one reader thread.
// LocalEndpoint and SshEndpoint both own one of these.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "helper/remote/byte_stream.hpp"
#include "helper/remote/endpoint.hpp"
#include "protocol/agent_wire.hpp"
#include "protocol/framing.hpp"

namespace ferry::remote {

class AgentLink {
 public:
  explicit AgentLink(std::unique_ptr<ByteStream> stream);
  ~AgentLink();
  AgentLink(const AgentLink&) = delete;
  AgentLink& operator=(const AgentLink&) = delete;

  // Reads the magic line before `deadline`, starts the reader thread, then says agent/hello.
  std::expected<AgentInfo, ResponseError> handshake(Clock::time_point deadline);

  std::expected<json, ResponseError> call(std::string_view method, json params, std::chrono::milliseconds timeout);
  std::expected<void, ResponseError> notify(std::string_view method, json params);
  void set_notification_handler(NotificationHandler handler);

  // When the agent's stream ends, this explains why (e.g. "exited with status 3"). Called on the
  // reader thread; may block briefly.
  void set_exit_describer(std::function<std::string()> describer);

  bool alive() const { return alive_.load(); }
  std::size_t pending_calls() const;
  // Why the link died ("" while alive).
  std::string failure() const;

  // Sends EOF to the agent (it exits on it).
  void close_write();
  // Stops the reader thread and fails every waiting call. Idempotent.
  void stop();

 private:
  struct Pending {
    std::optional<std::expected<json, ResponseError>> outcome;
  };
  void reader_loop();
  void take_chunk();
  void deliver(protocol::Message&& message);  // a reply's result is moved to its caller
  void fail_all(const std::string& why);
  std::expected<void, ResponseError> send(protocol::Message message);  // moved into the frame

  std::unique_ptr<ByteStream> stream_;
  protocol::FrameDecoder decoder_;
  // The big byte string of the frame being read (a pulled chunk), taken out of it by
  // decoder_.divert and read from the stream straight into a buffer of protocol::received_chunks:
  // `chunk_have_` of its bytes are in. The message gets the buffer itself.
  std::optional<protocol::OwnedByteString> chunk_;
  std::size_t chunk_have_ = 0;
  std::thread reader_;
  std::atomic<bool> alive_{false};
  std::atomic<bool> stopping_{false};

  mutable std::mutex mutex_;  // guards pending_, failure_, handlers
  std::condition_variable cv_;
  std::map<std::int64_t, std::shared_ptr<Pending>> pending_;
  std::int64_t next_id_ = 1;
  std::string failure_;
  NotificationHandler on_notification_;
  std::function<std::string()> describe_exit_;

  std::mutex write_mutex_;  // one frame at a time on the stream
};

}  // namespace ferry::remote
