// ferry-agent: magic line on stdout, then CBOR JSON-RPC frames on stdin/stdout, served by
// protocol's Dispatcher, until EOF or agent/shutdown. Stdout belongs to the wire (one FrameWriter, shared with the run streams);
// logs go to stderr. `--supervise RUNDIR` is the hidden run-supervisor mode (run/supervisor.hpp).
#include <malloc.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "common/private_files.hpp"
#include "common/build_info.hpp"
#include "ferry/version.hpp"
#include "protocol/agent_wire.hpp"
#include "protocol/binding_table.hpp"
#include "protocol/dispatcher.hpp"
#include "protocol/messages_agent.hpp"
#include "remote-runtime/agent/agent_service.hpp"
#include "remote-runtime/agent/autostop/autostop_methods.hpp"
#include "remote-runtime/agent/autostop/cloud_events.hpp"
#include "remote-runtime/agent/autostop/spot_watch.hpp"
#include "remote-runtime/agent/autostop/watchdog.hpp"
#include "remote-runtime/agent/gpu_methods.hpp"
#include "remote-runtime/agent/gpu_query.hpp"
#include "remote-runtime/agent/run/detached_agent.hpp"
#include "remote-runtime/agent/request_scheduler.hpp"
#include "remote-runtime/agent/root_path.hpp"
#include "remote-runtime/agent/run/frame_writer.hpp"
#include "remote-runtime/agent/run/run_methods.hpp"
#include "remote-runtime/agent/run/run_store.hpp"
#include "remote-runtime/agent/run/slurm_alloc_methods.hpp"
#include "remote-runtime/agent/run/slurm_job.hpp"
#include "remote-runtime/agent/run/supervisor.hpp"
#include "remote-runtime/agent/sync_methods.hpp"
#include "remote-runtime/agent/tcp_relay_methods.hpp"

namespace {

void usage(std::ostream& out) {
  out << "usage: ferry-agent --root DIR [--state-dir DIR] [--log-level LEVEL] [--installed]\n"
         "       ferry-agent --autostop-watch STATE_DIR [--id ID] [--take-over] [--webhook-stdin]\n"
         "                                              (the autostop watchdog; started by the agent)\n"
         "       ferry-agent --spot-watch STATE_DIR       (the spot-notice watcher; started by the agent)\n"
         "       ferry-agent --slurm-job RUN_DIR          (a run that is a Slurm job: submits and follows it)\n"
         "       ferry-agent --slurm-step SCRIPT          (that job's batch script, on the compute node)\n"
         "       ferry-agent --slurm-hold SCRIPT          (an allocation's batch script: holds the nodes)\n"
         "       ferry-agent --job-link                   (an agent inside a running job, through srun; where: stdin's first line)\n"
         "       ferry-agent --version\n"
         "Serves ferry's CBOR JSON-RPC on stdin/stdout inside DIR (created if missing).\n"
         "Runs live under --state-dir (default $XDG_CACHE_HOME/ferry/state or ~/.cache/ferry/state).\n"
         "--installed: this binary is ferry's install on the box and stderr its agent.log (both kept private).\n";
}

// Started by ferry over SSH from its install dir with stderr appended to agent.log there, which the
// shell created under the login's umask (0644), as older ferries made the dir 0755: both made
// owner-only before anything is logged. Never without --installed: a local agent's stderr is the
// helper's own, maybe a file of the user's.
void keep_install_private() {
  struct stat st {};
  if (::fstat(STDERR_FILENO, &st) == 0 && S_ISREG(st.st_mode)) ferry::posix::make_private(STDERR_FILENO);
  std::error_code ec;
  const std::filesystem::path self = ferry::agent::run::agent_self_path();
  const auto exe = self == "/proc/self/exe" ? std::filesystem::read_symlink(self, ec) : self;
  if (!ec && exe.filename().string().starts_with("ferry-agent")) ferry::posix::make_private_dirs(exe.parent_path());
}

// Workers for sync writes (each writeBatch also writes its files on threads of its own), and
// how many such requests may wait for one before the reader stops reading.
constexpr unsigned kRequestWorkers = 3;
constexpr std::size_t kMaxQueuedRequests = 8;
// After this much input, an agent idle on stdin for kIdleTrimMs gives its freed heap back.
constexpr std::uint64_t kTrimAfterBytes = 1u << 20;
constexpr int kIdleTrimMs = 1000;

namespace agent = ferry::agent;
namespace protocol = ferry::protocol;

// Sync writes run on a few workers and are answered when done (out of order); the rest runs on
// the reader thread in arrival order. The ordering argument is at classify_sync_request
// (sync_methods.hpp). FERRY_AGENT_WORKERS=0 serves everything on the reader thread (the old
// agent: for benchmarks and for ruling the workers out when chasing a problem).
unsigned request_workers() {
  if (const char* w = std::getenv("FERRY_AGENT_WORKERS"); w && *w >= '0' && *w <= '9' && w[1] == '\0')
    return static_cast<unsigned>(*w - '0');
  return kRequestWorkers;
}

agent::RequestLane classify(const std::string& method, const protocol::json& params) {
  if (method == protocol::method::kAgentShutdown) return agent::RequestLane{agent::RequestLane::barrier, {}};
  return agent::classify_sync_request(method, params);
}

void log_line(protocol::LogLevel level, const std::string& line) {
  switch (level) {
    case protocol::LogLevel::debug: spdlog::debug("{}", line); break;
    case protocol::LogLevel::info: spdlog::info("{}", line); break;
    case protocol::LogLevel::warn: spdlog::warn("{}", line); break;
    case protocol::LogLevel::error: spdlog::error("{}", line); break;
  }
}

// False once no one reads stdout (the helper's sshd died, the pipe's reader is gone): a pipe
// then polls as POLLERR, a socket as POLLHUP. One poll per request, not per byte.
bool replies_can_reach_the_helper() {
  pollfd out{STDOUT_FILENO, 0, 0};
  return !(::poll(&out, 1, 0) > 0 && (out.revents & (POLLERR | POLLHUP)));
}

// sshd hands a session channel's data to us through 64 KiB pipes: it then writes a pushed
// chunk in 64 KiB pieces, growing and compacting its channel buffer for the rest, and we wake
// per piece. 1 MiB pipes (the unprivileged maximum) took a tenth off an initial sync of 20000
// files + 256 MiB at 50 ms on 2 cores (bench/wan). They count against the user's pipe quota
// (fs.pipe-user-pages-soft, 64 MiB by default; past it the kernel gives that user's new pipes
// 8 KiB), and a far link keeps 17 agents for its life: so an agent that goes quiet after
// megabytes narrows its pipes back, and widens them when the next request comes. Not a pipe, or
// over the quota: left as it is.
constexpr int kWidePipe = 1 << 20;
constexpr int kNarrowPipe = 64 << 10;

void size_stdio_pipes(int bytes) {
  for (int fd : {STDIN_FILENO, STDOUT_FILENO})
    if (::fcntl(fd, F_GETPIPE_SZ) > 0 && ::fcntl(fd, F_SETPIPE_SZ, bytes) < 0)
      spdlog::debug("pipe {} stays at {} bytes: {}", fd, ::fcntl(fd, F_GETPIPE_SZ), std::strerror(errno));
}

// Frames from stdin into the dispatcher until EOF, a fatal frame, a reply that could not be
// written, or agent/shutdown. Returns the exit code.
int read_loop(protocol::Dispatcher& dispatcher, agent::RequestScheduler& scheduler, agent::run::FrameWriter& writer,
              agent::run::RunMethods& runs, const agent::AgentService& service, const agent::SyncMethods& sync) {
  protocol::FrameDecoder decoder(protocol::agent_frame_limits());
  // Read straight into the decoder, bodies parsed from views into it: a pushed chunk is not
  // copied on its way to the CBOR parser.
  constexpr std::size_t kReadAtMost = 1u << 20;
  std::uint64_t since_trim = 0;
  bool wide = true;  // main() widened them
  while (true) {
    if (since_trim >= kTrimAfterBytes) {
      // Megabytes went through: once the helper has been quiet for a second, give the freed
      // heap back (mallopt above keeps 64 MiB per arena for the next burst). A bulk lane's agent
      // otherwise held ~95 MB for the life of the link, and a long link has up to 16 of them.
      pollfd ready{STDIN_FILENO, POLLIN, 0};
      if (::poll(&ready, 1, kIdleTrimMs) == 0) {
        decoder.release_spare();
        sync.release_idle_memory();
        ::malloc_trim(0);
        size_stdio_pipes(kNarrowPipe);
        wide = false;
        since_trim = 0;
      }
    }
    ssize_t n = 0;
    int read_errno = 0;
    decoder.fill(kReadAtMost, [&](char* into, std::size_t room) {
      n = ::read(STDIN_FILENO, into, room);
      read_errno = errno;
      return n > 0 ? static_cast<std::size_t>(n) : std::size_t{0};
    });
    if (n < 0) {
      if (read_errno == EINTR) continue;
      spdlog::error("read stdin: {}", std::strerror(read_errno));
      return 1;
    }
    if (n == 0) {
      if (decoder.mid_frame()) spdlog::warn("helper closed the link mid-frame");
      // A helper that waits for its replies closes only after the last one; EOF with writes still
      // queued means it went away (a dropped link). Writes not yet begun are dropped like after a
      // failed reply: run late, they would change files under the next agent's sync.
      scheduler.mark_failed();
      return 0;
    }
    since_trim += static_cast<std::uint64_t>(n);
    if (!wide) {
      size_stdio_pipes(kWidePipe);
      wide = true;
    }
    while (auto frame = decoder.next_view()) {
      if (scheduler.failed()) return 1;
      std::optional<protocol::Response> reply;
      if (!*frame) {
        const auto& issue = frame->error();
        spdlog::error("bad frame from the helper: {}", issue.message);
        // A body over the cap was skipped (-32095, the link goes on); a broken header, or a body
        // too big to skip, cannot be resynchronised: the link ends.
        reply = protocol::make_error(nullptr, issue.kind == protocol::FrameIssueKind::body_too_large
                                                  ? protocol::error_code::kMessageTooLarge
                                                  : protocol::error_code::kParseError, issue.message);
        if (issue.fatal) {
          writer.send(*reply);
          return 1;
        }
      } else if (auto value = protocol::decode_agent_value(**frame); !value) {
        spdlog::warn("bad message from the helper: {}", value.error().error.message);
        reply = protocol::Response{value.error().id, value.error().error};
      } else {
        dispatcher.handle_value(std::move(*value));
      }
      if (reply && !writer.send(*reply)) {
        spdlog::error("write stdout: {}", std::strerror(errno));
        return 1;
      }
      if (scheduler.failed()) return 1;
      // Streams asked for by run/attach start only now that its reply is written (run/* runs
      // on this thread, so handle_value has answered it).
      runs.start_pending_streams();
      if (service.shutdown_requested()) return 0;
    }
  }
}

// Serves the agent wire on stdin/stdout: every method family bound into one BindingTable,
// served by protocol's Dispatcher (CBOR, no LSP lifecycle) with the RequestScheduler as its
// schedule hook.
// `in_job`: inside a Slurm job (--job-link): the cluster owns the node, so no autostop and no spot
// watch.
int serve(const agent::RootPath& root, const std::filesystem::path& state_dir, bool in_job) {
  // Runs, marks, autostop and spot state are the user's alone; an older ferry left the dir 0755.
  if (auto ec = ferry::posix::make_private_dirs(state_dir)) spdlog::warn("state dir {}: {}", state_dir.string(), ec.message());
  auto writer = std::make_shared<agent::run::FrameWriter>(STDOUT_FILENO);
  protocol::BindingTable table;
  agent::AgentService service(root);
  service.bind(table);
  agent::SyncMethods sync_methods(root);
  sync_methods.bind(table);
  auto run_methods = std::make_shared<agent::run::RunMethods>(root, state_dir, writer);
  run_methods->bind(table);
  // FERRY_NVML_LIBRARY: an NVML outside the loader's path (and the tests' stand-in).
  agent::bind_gpu_methods(table, {agent::default_nvidia_smi(), state_dir, "/proc"});
  // This agent counts as a connected helper for autostop while it serves; an armed autostop whose
  // watchdog is gone (a reboot, a kill) gets one again from the next agent.
  const agent::autostop::Paths autostop_paths{state_dir};
  std::optional<agent::autostop::ConnectionMark> connection_mark;
  if (!in_job) {
    connection_mark.emplace(autostop_paths);
    agent::autostop::ensure_watchdog(autostop_paths);
    agent::autostop::bind_autostop_methods(table, autostop_paths);
    agent::spot::ensure_watcher(state_dir);  // a spot watch armed before a restart goes on
    agent::spot::bind_spot_methods(table, state_dir);
  }
  agent::run::bind_slurm_alloc_methods(table, state_dir);
  agent::TcpRelayMethods tcp(writer);
  tcp.bind(table);
  // Streams end (threads joined) on every way out of the loop; the runs themselves go on.
  struct StopStreams {
    std::shared_ptr<agent::run::RunMethods> runs;
    ~StopStreams() { runs->stop_all(); }
  } stop_streams{run_methods};

  if (!writer->send_raw(protocol::agent_magic_line(ferry::kAgentProtocolVersion, ferry::kVersion) + "\n")) return 1;
  // What the spot watcher and the autostop watchdog record from now on reaches the helper.
  agent::autostop::CloudEventTail cloud_events(
      state_dir, [writer](const protocol::json& params) { writer->send_notification("cloud/event", params); });

  agent::RequestScheduler scheduler(request_workers(), kMaxQueuedRequests, classify);
  scheduler.set_link_probe(replies_can_reach_the_helper);
  protocol::DispatcherHooks hooks;
  hooks.send = [&writer, &scheduler](const protocol::json& message) {
    if (writer->send_value(message)) return;
    spdlog::error("write stdout: {}", std::strerror(errno));
    scheduler.mark_failed();
  };
  hooks.schedule = [&scheduler](const std::string& method, const protocol::json& params, protocol::Execution,
                                std::function<void()> task) { scheduler.schedule(method, params, std::move(task)); };
  hooks.log = log_line;
  protocol::Dispatcher dispatcher(table, std::move(hooks), protocol::DispatcherOptions{protocol::Encoding::cbor, false});
  // Queued tasks call into the dispatcher: they finish before it goes (the scheduler's own end
  // would drain them too late).
  struct DrainFirst {
    agent::RequestScheduler& scheduler;
    ~DrainFirst() { scheduler.drain(); }
  } drain_first{scheduler};
  return read_loop(dispatcher, scheduler, *writer, *run_methods, service, sync_methods);
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("ferry-agent"));
  spdlog::set_level(spdlog::level::warn);
  if (argc == 3 && std::string_view(argv[1]) == "--supervise") return ferry::agent::run::supervise(argv[2]);
  if (argc >= 3 && std::string_view(argv[1]) == "--autostop-watch")
    return ferry::agent::autostop::watch(argv[2], ferry::agent::autostop::parse_watch_options({argv + 3, argv + argc}));
  if (argc == 3 && std::string_view(argv[1]) == "--spot-watch") return ferry::agent::spot::watch(argv[2]);
  if (argc == 3 && std::string_view(argv[1]) == "--slurm-job") return ferry::agent::run::follow_slurm_job(argv[2]);
  if (argc == 3 && std::string_view(argv[1]) == "--slurm-step") return ferry::agent::run::run_slurm_step(argv[2]);
  if (argc == 3 && std::string_view(argv[1]) == "--slurm-hold") return ferry::agent::run::hold_allocation();
  if (argc == 2 && std::string_view(argv[1]) == "--job-link") return ferry::agent::run::start_job_link();
  // Sync requests allocate buffers of megabytes (frames, decompressed data): keep up to 64 MiB of
  // freed heap for the next one instead of page faults and zeroing per request (a tenth of the
  // agent's CPU in a big initial sync).
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, 64 << 20);
  std::string root_arg;
  std::string state_dir_arg;
  bool in_job = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--root" && i + 1 < argc) {
      root_arg = argv[++i];
    } else if (a == "--state-dir" && i + 1 < argc) {
      state_dir_arg = argv[++i];
    } else if (a == "--in-job") {
      in_job = true;
    } else if (a == "--installed") {
      keep_install_private();
    } else if (a == "--log-level" && i + 1 < argc) {
      spdlog::set_level(spdlog::level::from_str(argv[++i]));
    } else if (a == "--version") {
      std::cout << ferry::protocol::agent_magic_line(ferry::kAgentProtocolVersion, ferry::kVersion) << "\n"
                << "ferry-agent " << ferry::version_text() << "\n";
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
  size_stdio_pipes(kWidePipe);

  auto root = ferry::agent::RootPath::open(root_arg);
  if (!root) {
    std::cerr << "ferry-agent: " << root.error() << "\n";
    return 2;
  }
  std::error_code ec;
  // Absolute: supervisors run from "/" and find their run directory by this path.
  std::filesystem::path state_dir = std::filesystem::absolute(
      state_dir_arg.empty() ? ferry::agent::run::default_state_dir() : std::filesystem::path(state_dir_arg), ec);
  return serve(*root, state_dir, in_job);
}
