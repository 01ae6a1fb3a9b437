// The ferry-agent binary on raw pipes, for tests that decide themselves when (and whether) a
// message is read: frames are written as given and read one message at a time, each read with
// a deadline; nothing reads stdout in the background. Header-only; link ferry_remote.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "helper/remote/byte_stream.hpp"
#include "helper/remote/child_process.hpp"
#include "protocol/agent_wire.hpp"

namespace ferry::test {

// A struct: tests also close its stdin (stream->close_write()) and wait for child.
struct RawAgent {
  remote::ChildProcess child;
  std::unique_ptr<remote::FdStream> stream;
  protocol::FrameDecoder decoder{protocol::agent_frame_limits()};

  // argv[0] is the agent binary; returns once its preamble (magic line) has been read.
  explicit RawAgent(const std::vector<std::string>& argv) {
    auto s = child.spawn(argv);
    if (!s) throw std::runtime_error("spawning the agent: " + s.error());
    stream = std::make_unique<remote::FdStream>(s->stdout_fd, s->stdin_fd);
    std::string pre;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (true) {
      if (auto scan = protocol::scan_agent_preamble(pre)) {
        if (!scan->has_value()) throw std::runtime_error("the agent's preamble is not ferry's: " + pre);
        decoder.feed(std::string_view(pre).substr((*scan)->consumed));
        return;
      }
      char buf[256];
      auto r = stream->read_some(buf, deadline);
      if (r.status != remote::ReadStatus::data) throw std::runtime_error("no preamble from the agent");
      pre.append(buf, r.bytes);
    }
  }

  void send(const protocol::Request& r) {
    if (!stream->write_all(protocol::encode_agent_frame(r))) throw std::runtime_error("writing to the agent failed");
  }

  // The next message the agent wrote, within `within`.
  protocol::Message next(std::chrono::seconds within = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + within;
    std::vector<char> buf(1 << 16);
    while (true) {
      if (auto body = decoder.next()) {
        if (!body->has_value()) throw std::runtime_error("bad frame from the agent: " + body->error().message);
        auto m = protocol::decode_agent_body(**body);
        if (!m) throw std::runtime_error("bad message from the agent: " + m.error().error.message);
        return *m;
      }
      auto r = stream->read_some(std::span<char>(buf), deadline);
      if (r.status != remote::ReadStatus::data) throw std::runtime_error("no message from the agent in time");
      decoder.feed(std::string_view(buf.data(), r.bytes));
    }
  }
};

}  // namespace ferry::test
