// ferry-agent: magic line on stdout, then CBOR JSON-RPC frames on stdin/stdout until EOF or
// agent/shutdown. Stdout belongs to the wire; logs go to stderr.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "ferry/version.hpp"
#include "protocol/agent_wire.hpp"
#include "remote-runtime/agent/agent_service.hpp"
#include "remote-runtime/agent/gpu_methods.hpp"
#include "remote-runtime/agent/root_path.hpp"
#include "remote-runtime/agent/sync_methods.hpp"

namespace {

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void usage(std::ostream& out) {
  out << "usage: ferry-agent --root DIR [--log-level LEVEL]\n"
         "       ferry-agent --version\n"
         "Serves ferry's CBOR JSON-RPC on stdin/stdout inside DIR (created if missing).\n";
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("ferry-agent"));
  spdlog::set_level(spdlog::level::warn);
  std::string root_arg;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--root" && i + 1 < argc) {
      root_arg = argv[++i];
    } else if (a == "--log-level" && i + 1 < argc) {
      spdlog::set_level(spdlog::level::from_str(argv[++i]));
    } else if (a == "--version") {
      std::cout << ferry::protocol::agent_magic_line(ferry::kAgentProtocolVersion, ferry::kVersion) << "\n";
      return 0;
    } else if (a == "--help" || a == "-h") {
      usage(std::cout);
      return 0;
    } else {
      std::cerr << "ferry-agent: unknown argument '" << a << "'\n";
      usage(std::cerr);
      return 2;
    }
  }
  if (root_arg.empty()) {
    std::cerr << "ferry-agent: --root DIR is required\n";
    usage(std::cerr);
    return 2;
  }
  // A vanished helper must surface as a write error, not kill us mid-reply.
  ::signal(SIGPIPE, SIG_IGN);

  auto root = ferry::agent::RootPath::open(root_arg);
  if (!root) {
    std::cerr << "ferry-agent: " << root.error() << "\n";
    return 2;
  }
  auto sync_methods = std::make_shared<ferry::agent::SyncMethods>(*root);
  ferry::agent::AgentService service(std::move(*root));
  service.add_methods([sync_methods](const ferry::protocol::Request& r) { return sync_methods->handle(r); });
  service.add_methods([](const ferry::protocol::Request& r) { return ferry::agent::handle_gpu_method(r); });

  if (!write_all(STDOUT_FILENO, ferry::protocol::agent_magic_line(ferry::kAgentProtocolVersion, ferry::kVersion) + "\n"))
    return 1;

  ferry::protocol::FrameDecoder decoder(ferry::protocol::agent_frame_limits());
  std::string buf(1 << 16, '\0');
  while (true) {
    ssize_t n = ::read(STDIN_FILENO, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      spdlog::error("read stdin: {}", std::strerror(errno));
      return 1;
    }
    if (n == 0) {
      if (decoder.mid_frame()) spdlog::warn("helper closed the link mid-frame");
      return 0;
    }
    decoder.feed(std::string_view(buf.data(), static_cast<std::size_t>(n)));
    while (auto frame = decoder.next()) {
      std::optional<ferry::protocol::Response> reply;
      if (!*frame) {
        const auto& issue = frame->error();
        spdlog::error("bad frame from the helper: {}", issue.message);
        reply = ferry::protocol::make_error(nullptr, ferry::protocol::error_code::kMessageTooLarge, issue.message);
        if (issue.fatal) {
          reply->outcome = ferry::protocol::ResponseError{ferry::protocol::error_code::kParseError, issue.message, {}};
          write_all(STDOUT_FILENO, ferry::protocol::encode_agent_frame(*reply));
          return 1;
        }
      } else {
        auto message = ferry::protocol::decode_agent_body(**frame);
        if (!message) {
          spdlog::warn("bad message from the helper: {}", message.error().error.message);
          reply = ferry::protocol::Response{message.error().id, message.error().error};
        } else {
          reply = service.handle(*message);
        }
      }
      if (reply && !write_all(STDOUT_FILENO, ferry::protocol::encode_agent_frame(*reply))) {
        spdlog::error("write stdout: {}", std::strerror(errno));
        return 1;
      }
      if (service.shutdown_requested()) return 0;
    }
  }
}
