// One stream connection carried over a message link, for tunnels that go through an agent rather
// than through sshd (a Slurm job's compute node runs no sshd): bytes read from the socket leave as
// data messages, at most `window` bytes ahead of the peer's acknowledgements; bytes that arrive
// are written by a thread of their own and acknowledged, a quarter window at a time, once written.
// Half-closes travel each way. The link's reader only hands bytes over (on_data never blocks), so a
// slow socket stalls itself, not the link. Both ends (helper and agent) run one per connection with
// the same logic; the socket calls and the messages are the caller's, so nothing here knows sockets
// or JSON.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "common/socket_calls.hpp"

namespace ferry {

inline constexpr std::size_t kPumpChunk = 64 << 10;
inline constexpr std::size_t kPumpWindow = 1 << 20;

class SocketPump {
 public:
  struct Socket {
    // recv: bytes read, 0 at end of stream, < 0 on an error. send: the whole span or false.
    std::function<std::ptrdiff_t(std::uint8_t* buffer, std::size_t length)> recv;
    std::function<bool(std::span<const std::uint8_t>)> send;
    std::function<void()> shutdown_write;
    std::function<void()> shutdown_both;  // wakes a blocked recv; the caller closes the socket after
  };
  struct Peer {
    // Each false once the link is gone: the pump then stops.
    std::function<bool(std::span<const std::uint8_t>)> data;
    std::function<bool(std::uint64_t bytes)> ack;
    std::function<bool()> eof;
    // Both ways done; called once, from a pump thread. `clean`: both ends of stream came and
    // everything was written; otherwise stop() cut it (a socket error, the peer gone, a close),
    // and the peer should be told, as what it still holds will not be delivered.
    std::function<void(bool clean)> finished;
  };

  // `granted`: the peer may take `window` bytes at once. Otherwise nothing is read until its first
  // ack grants them (the agent's end: the helper must know the connection before data comes).
  SocketPump(Socket socket, Peer peer, bool granted = true, std::size_t window = kPumpWindow);
  ~SocketPump();  // stop() and join
  SocketPump(const SocketPump&) = delete;
  SocketPump& operator=(const SocketPump&) = delete;

  void start();
  // From the link's reader; none of them block.
  void on_data(std::vector<std::uint8_t> bytes);
  void on_ack(std::uint64_t bytes);
  void on_eof();
  // Ends both ways now (the peer is gone or the tunnel closes); idempotent.
  void stop();
  // Waits for both threads (after stop() or both ways' ends); never from a pump thread.
  void join();

 private:
  void read_loop();
  void write_loop();
  void end_one_way();

  Socket socket_;
  Peer peer_;
  std::size_t window_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::vector<std::uint8_t>> incoming_;
  bool incoming_eof_ = false;
  std::size_t unacked_ = 0;
  bool stopping_ = false;
  int ways_left_ = 2;
  std::thread reader_;
  std::thread writer_;
};

// A connected socket's calls (recv and send retrying EINTR, no SIGPIPE, shutdown): what the agent
// and the helper give their pumps (common/posix/, common/windows/). The caller keeps the socket
// and closes it.
SocketPump::Socket native_socket_calls(net::NativeSocket s);

}  // namespace ferry
