// The stream transport: see stdio_transport.hpp.
#include "helper/server/stdio_transport.hpp"

#include <cerrno>
#include <cstring>
#include <optional>
#include <vector>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "common/terminal.hpp"

#include "helper/server/output_channel.hpp"
#include "helper/server/worker_pool.hpp"
#include "protocol/dispatcher.hpp"

namespace ferry::server {
namespace {

constexpr std::size_t kReadChunk = 256u << 10;

void log_to_spdlog(protocol::LogLevel level, const std::string& message) {
  switch (level) {
    case protocol::LogLevel::debug: spdlog::debug("{}", message); break;
    case protocol::LogLevel::info: spdlog::info("{}", message); break;
    case protocol::LogLevel::warn: spdlog::warn("{}", message); break;
    case protocol::LogLevel::error: spdlog::error("{}", message); break;
  }
}

}  // namespace

int serve_stream(const protocol::BindingTable& table, int in_fd, int out_fd, const TransportOptions& options) {
  platform::set_binary_mode(in_fd);
  platform::set_binary_mode(out_fd);
  std::optional<OutputChannel> own;
  OutputChannel& out = options.output ? *options.output : own.emplace(out_fd, options.encoding);
  WorkerPool pool(options.workers);
  std::optional<int> exit_code;
  bool unreadable = false;
  bool eof = false;

  protocol::DispatcherHooks hooks;
  hooks.send = [&out](const protocol::json& m) { out.send(m); };
  hooks.post = [&pool](std::function<void()> task) { pool.post(std::move(task)); };
  hooks.on_exit = [&exit_code](int code) { exit_code = code; };
  hooks.log = log_to_spdlog;
  if (options.outgoing) {
    options.outgoing->attach([&out](const protocol::json& m) { out.send(m); });
    hooks.on_response = [outgoing = options.outgoing](const protocol::Response& r) { return outgoing->route(r); };
  }
  protocol::Dispatcher dispatcher(table, std::move(hooks),
                                  protocol::DispatcherOptions{options.encoding, options.lsp_lifecycle});

  protocol::FrameDecoder decoder(options.limits);
  std::vector<char> buffer(kReadChunk);
  while (!exit_code && !unreadable) {
    ssize_t n = ::read(in_fd, buffer.data(), buffer.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      spdlog::error("reading the input stream failed: {}", std::strerror(errno));
      break;
    }
    if (n == 0) {
      if (decoder.mid_frame()) spdlog::warn("the peer closed the input stream in the middle of a frame");
      spdlog::info("input stream closed");
      eof = true;
      break;
    }
    decoder.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
    out.cork();
    while (!exit_code) {
      auto frame = decoder.next();
      if (!frame) break;
      if (frame->has_value()) {
        dispatcher.handle_body(**frame);
        continue;
      }
      const protocol::FrameIssue& issue = frame->error();
      spdlog::warn("bad frame: {}", issue.message);
      if (!issue.fatal) {
        out.send(protocol::to_json(protocol::make_error(nullptr, protocol::error_code::kMessageTooLarge,
                                                        "message refused: " + issue.message)));
        continue;
      }
      // The stream cannot go on (a broken header, or a body too big to skip): answer, then end
      // with status 1, which an LSP client sees and can restart on, instead of reading on deaf.
      spdlog::error("closing the input stream after a frame it cannot read past: {}", issue.message);
      if (issue.kind == protocol::FrameIssueKind::body_too_large)
        out.send(protocol::to_json(protocol::make_error(nullptr, protocol::error_code::kMessageTooLarge,
                                                        "message refused: " + issue.message + "; closing")));
      else
        out.send(protocol::to_json(protocol::make_error(nullptr, protocol::error_code::kParseError,
                                                        "unreadable frame: " + issue.message + "; closing")));
      unreadable = true;
      break;
    }
    out.uncork();
  }

  // Orderly end: nothing new starts, running handlers see cancellation, the pool drains.
  // Handlers waiting on the client's answer fail first: nothing is read any more, so no answer
  // can arrive.
  if (options.outgoing) options.outgoing->detach("the client closed the session");
  if (eof && !dispatcher.wait_idle(options.eof_grace))
    spdlog::warn("cancelling {} request(s) still running at end of input", dispatcher.in_flight());
  dispatcher.cancel_all();
  pool.stop();
  if (exit_code) return *exit_code;
  if (unreadable) return 1;
  return dispatcher.shutdown_received() ? 0 : 1;
}

}  // namespace ferry::server
