// ferry-agent: magic line on stdout, then CBOR JSON-RPC frames on stdin/stdout until EOF or
// agent/shutdown. Stdout belongs to the wire (one FrameWriter, shared with the run streams);
// logs go to stderr. `--supervise RUNDIR` is the hidden run-supervisor mode (run/supervisor.hpp).
#include <malloc.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "ferry/version.hpp"
#include "protocol/agent_wire.hpp"
#include "remote-runtime/agent/agent_service.hpp"
#include "remote-runtime/agent/autostop/autostop_methods.hpp"
#include "remote-runtime/agent/autostop/cloud_events.hpp"
#include "remote-runtime/agent/autostop/spot_watch.hpp"
#include "remote-runtime/agent/autostop/watchdog.hpp"
#include "remote-runtime/agent/gpu_methods.hpp"
#include "remote-runtime/agent/request_scheduler.hpp"
#include "remote-runtime/agent/root_path.hpp"
#include "remote-runtime/agent/run/frame_writer.hpp"
#include "remote-runtime/agent/run/run_methods.hpp"
#include "remote-runtime/agent/run/run_store.hpp"
#include "remote-runtime/agent/run/supervisor.hpp"
#include "remote-runtime/agent/sync_methods.hpp"

namespace {

void usage(std::ostream& out) {
  out << "usage: ferry-agent --root DIR [--state-dir DIR] [--log-level LEVEL]\n"
         "       ferry-agent --autostop-watch STATE_DIR [--id ID] [--take-over] [--webhook-stdin]\n"
         "                                              (the autostop watchdog; started by the agent)\n"
         "       ferry-agent --spot-watch STATE_DIR       (the spot-notice watcher; started by the agent)\n"
         "       ferry-agent --version\n"
         "Serves ferry's CBOR JSON-RPC on stdin/stdout inside DIR (created if missing).\n"
         "Runs live under --state-dir (default $XDG_CACHE_HOME/ferry/state or ~/.cache/ferry/state).\n";
}

// Workers for sync writes (each writeBatch also writes its files on threads of its own), and
// how many such requests may wait for one before the reader stops reading.
constexpr unsigned kRequestWorkers = 3;
constexpr std::size_t kMaxQueuedRequests = 8;

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("ferry-agent"));
  spdlog::set_level(spdlog::level::warn);
  if (argc == 3 && std::string_view(argv[1]) == "--supervise") return ferry::agent::run::supervise(argv[2]);
  if (argc >= 3 && std::string_view(argv[1]) == "--autostop-watch")
    return ferry::agent::autostop::watch(argv[2], ferry::agent::autostop::parse_watch_options({argv + 3, argv + argc}));
  if (argc == 3 && std::string_view(argv[1]) == "--spot-watch") return ferry::agent::spot::watch(argv[2]);
  // Sync requests allocate buffers of megabytes (frames, decompressed data): keep up to 64 MiB of
  // freed heap for the next one instead of page faults and zeroing per request (a tenth of the
  // agent's CPU in a big initial sync).
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 64 << 20);
  std::string root_arg;
  std::string state_dir_arg;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--root" && i + 1 < argc) {
      root_arg = argv[++i];
    } else if (a == "--state-dir" && i + 1 < argc) {
      state_dir_arg = argv[++i];
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
  std::error_code ec;
  // Absolute: supervisors run from "/" and find their run directory by this path.
  std::filesystem::path state_dir = std::filesystem::absolute(
      state_dir_arg.empty() ? ferry::agent::run::default_state_dir() : std::filesystem::path(state_dir_arg), ec);
  auto writer = std::make_shared<ferry::agent::run::FrameWriter>(STDOUT_FILENO);
  auto sync_methods = std::make_shared<ferry::agent::SyncMethods>(*root);
  auto run_methods = std::make_shared<ferry::agent::run::RunMethods>(*root, state_dir, writer);
  ferry::agent::AgentService service(std::move(*root));
  service.add_methods([sync_methods](const ferry::protocol::Request& r) { return sync_methods->handle(r); });
  // FERRY_NVML_LIBRARY: an NVML outside the loader's path (and the tests' stand-in).
  const char* nvml_env = std::getenv("FERRY_NVML_LIBRARY");
  ferry::agent::GpuMethodOptions gpu_options{nvml_env && *nvml_env ? nvml_env : "libnvidia-ml.so.1", state_dir, "/proc"};
  service.add_methods([gpu_options](const ferry::protocol::Request& r) { return ferry::agent::handle_gpu_method(r, gpu_options); });
  service.add_methods([run_methods](const ferry::protocol::Request& r) { return run_methods->handle(r); });
  // This agent counts as a connected helper for autostop while it serves; an armed autostop whose
  // watchdog is gone (a reboot, a kill) gets one again from the next agent.
  const ferry::agent::autostop::Paths autostop_paths{state_dir};
  ferry::agent::autostop::ConnectionMark connection_mark(autostop_paths);
  ferry::agent::autostop::ensure_watchdog(autostop_paths);
  service.add_methods([&autostop_paths](const ferry::protocol::Request& r) {
    return ferry::agent::autostop::handle_autostop_method(r, autostop_paths);
  });
  ferry::agent::spot::ensure_watcher(state_dir);  // a spot watch armed before a restart goes on
  service.add_methods([state_dir](const ferry::protocol::Request& r) { return ferry::agent::spot::handle_spot_method(r, state_dir); });
  // Streams end (threads joined) on every way out of the loop; the runs themselves go on.
  struct StopStreams {
    std::shared_ptr<ferry::agent::run::RunMethods> runs;
    ~StopStreams() { runs->stop_all(); }
  } stop_streams{run_methods};

  if (!writer->send_raw(ferry::protocol::agent_magic_line(ferry::kAgentProtocolVersion, ferry::kVersion) + "\n"))
    return 1;
  // What the spot watcher and the autostop watchdog record from now on reaches the helper.
  ferry::agent::autostop::CloudEventTail cloud_events(
      state_dir, [writer](const ferry::protocol::json& params) { writer->send_notification("cloud/event", params); });

  // Sync writes run on a few workers and are answered when done (out of order); the rest runs
  // here in arrival order. The ordering argument is at classify_sync_request (sync_methods.hpp).
  // FERRY_AGENT_WORKERS=0 serves everything on the reader thread (the old agent: for
  // benchmarks and for ruling the workers out when chasing a problem).
  unsigned workers = kRequestWorkers;
  if (const char* w = std::getenv("FERRY_AGENT_WORKERS"); w && *w >= '0' && *w <= '9' && w[1] == '\0')
    workers = static_cast<unsigned>(*w - '0');
  ferry::agent::RequestScheduler scheduler(
      workers, kMaxQueuedRequests,
      [&service](const ferry::protocol::Message& m) { return service.handle(m); },
      [&writer](const ferry::protocol::Response& r) {
        if (writer->send(r)) return true;
        spdlog::error("write stdout: {}", std::strerror(errno));
        return false;
      },
      [](const ferry::protocol::Request& r) {
        if (r.method == "agent/shutdown") return ferry::agent::RequestLane{ferry::agent::RequestLane::barrier, {}};
        return ferry::agent::classify_sync_request(r);
      });
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
      if (scheduler.failed()) return 1;
      if (!*frame) {
        const auto& issue = frame->error();
        spdlog::error("bad frame from the helper: {}", issue.message);
        reply = ferry::protocol::make_error(nullptr, ferry::protocol::error_code::kMessageTooLarge, issue.message);
        if (issue.fatal) {
          reply->outcome = ferry::protocol::ResponseError{ferry::protocol::error_code::kParseError, issue.message, {}};
          writer->send(*reply);
          return 1;
        }
      } else {
        auto message = ferry::protocol::decode_agent_body(**frame);
        if (!message) {
          spdlog::warn("bad message from the helper: {}", message.error().error.message);
          reply = ferry::protocol::Response{message.error().id, message.error().error};
        } else {
          scheduler.submit(std::move(*message));
        }
      }
      if (reply && !writer->send(*reply)) {
        spdlog::error("write stdout: {}", std::strerror(errno));
        return 1;
      }
      if (scheduler.failed()) return 1;
      run_methods->start_pending_streams();
      if (service.shutdown_requested()) return 0;
    }
  }
}
