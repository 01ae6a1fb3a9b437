// SocketPump: a reader thread (socket -> peer, held to the window) and a writer thread (peer ->
// socket, each chunk acknowledged once written).
#include "common/socket_pump.hpp"

#include <algorithm>

namespace ferry {

SocketPump::SocketPump(Socket socket, Peer peer, bool granted, std::size_t window)
    : socket_(std::move(socket)), peer_(std::move(peer)), window_(std::max<std::size_t>(window, kPumpChunk)),
      unacked_(granted ? 0 : window_) {}

SocketPump::~SocketPump() {
  stop();
  join();
}

void SocketPump::join() {
  if (reader_.joinable()) reader_.join();
  if (writer_.joinable()) writer_.join();
}

void SocketPump::start() {
  reader_ = std::thread([this] { read_loop(); });
  writer_ = std::thread([this] { write_loop(); });
}

void SocketPump::on_data(std::vector<std::uint8_t> bytes) {
  {
    std::lock_guard lk(mutex_);
    if (stopping_ || incoming_eof_) return;
    incoming_.push_back(std::move(bytes));
  }
  cv_.notify_all();
}

void SocketPump::on_ack(std::uint64_t bytes) {
  {
    std::lock_guard lk(mutex_);
    unacked_ -= std::min<std::size_t>(unacked_, bytes);
  }
  cv_.notify_all();
}

void SocketPump::on_eof() {
  {
    std::lock_guard lk(mutex_);
    incoming_eof_ = true;
  }
  cv_.notify_all();
}

void SocketPump::stop() {
  {
    std::lock_guard lk(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (socket_.shutdown_both) socket_.shutdown_both();
}

// The last of the two ways to end tells the owner, which may then drop the pump (from another
// thread: a pump never joins itself).
void SocketPump::end_one_way() {
  bool last = false, clean = false;
  {
    std::lock_guard lk(mutex_);
    last = --ways_left_ == 0;
    clean = !stopping_;
  }
  if (last && peer_.finished) peer_.finished(clean);
}

void SocketPump::read_loop() {
  std::vector<std::uint8_t> buffer(kPumpChunk);
  for (;;) {
    std::size_t room = 0;
    {
      std::unique_lock lk(mutex_);
      cv_.wait(lk, [&] { return stopping_ || unacked_ < window_; });
      if (stopping_) break;
      room = std::min(kPumpChunk, window_ - unacked_);
    }
    const auto n = socket_.recv(buffer.data(), room);
    if (n <= 0) {  // end of stream, or an error: either way nothing more comes from this side
      if (!peer_.eof()) stop();
      break;
    }
    {
      std::lock_guard lk(mutex_);
      unacked_ += static_cast<std::size_t>(n);
    }
    if (!peer_.data({buffer.data(), static_cast<std::size_t>(n)})) {
      stop();
      break;
    }
  }
  end_one_way();
}

// Acks go out by the quarter window, not per chunk: an ack right behind every small write doubled
// the messages of an interactive exchange, and on a path with Nagle's algorithm somewhere (srun's
// I/O forwarding) the second small message waited for a delayed ACK: 88 ms per round trip. The
// peer's reader still never stalls: by the time it has a full window out, a quarter of it was
// written here and acked.
void SocketPump::write_loop() {
  const std::uint64_t ack_every = std::max<std::uint64_t>(window_ / 4, 1);
  std::uint64_t written = 0;  // since the last ack
  for (;;) {
    std::vector<std::uint8_t> chunk;
    {
      std::unique_lock lk(mutex_);
      cv_.wait(lk, [&] { return stopping_ || !incoming_.empty() || incoming_eof_; });
      if (stopping_) break;
      if (incoming_.empty()) {  // the peer's end of stream, after everything it sent
        lk.unlock();
        socket_.shutdown_write();
        break;
      }
      chunk = std::move(incoming_.front());
      incoming_.pop_front();
    }
    if (!socket_.send(chunk)) {  // the socket's reader is gone: nothing more can be delivered
      stop();
      break;
    }
    written += chunk.size();
    if (written >= ack_every) {
      if (!peer_.ack(written)) {
        stop();
        break;
      }
      written = 0;
    }
  }
  end_one_way();
}

}  // namespace ferry
