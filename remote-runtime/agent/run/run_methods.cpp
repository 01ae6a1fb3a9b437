// run/* methods and the attach streams: see run_methods.hpp.
#include "remote-runtime/agent/run/run_methods.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <spdlog/spdlog.h>

#include "remote-runtime/agent/raw_binding.hpp"
#include "remote-runtime/agent/run/output_log.hpp"
#include "remote-runtime/agent/run/port_watch.hpp"
#include "remote-runtime/agent/run/slurm_job.hpp"
#include "remote-runtime/agent/run/supervisor.hpp"

extern char** environ;

namespace ferry::agent::run {
namespace {

using protocol::Response;
namespace ec = protocol::error_code;

constexpr std::chrono::milliseconds kLaunchTimeout{10'000};
constexpr std::chrono::milliseconds kInputTimeout{10'000};
// An attach stream with no exit.json checks this often whether the supervisor still lives, so
// a lost run ends its stream instead of hanging it. Events, not this, drive the streaming.
constexpr int kLivenessCheckMs = 2000;
constexpr int kFallbackPollMs = 100;
// How often an attached run's listeners are looked for (run/attach `ports`): a server the run starts
// is forwarded within about this much of its listen. Two small /proc files per look.
constexpr int kPortPollMs = 250;
constexpr std::size_t kDefaultReadBytes = 1u << 20;
constexpr std::size_t kMaxReadBytes = 16u << 20;

Response bad(const protocol::Request& r, const std::string& why) {
  return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": " + why);
}

Response io_error(const protocol::Request& r, const std::string& why) {
  return protocol::make_error(r.id, ec::kIoError, r.method + ": " + why);
}

std::optional<std::string> string_param(const json& p, const char* key) {
  auto it = p.find(key);
  if (it == p.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

std::optional<std::uint64_t> uint_param(const json& p, const char* key) {
  auto it = p.find(key);
  if (it == p.end() || !it->is_number_integer() || it->get<long long>() < 0) return std::nullopt;
  return it->get<std::uint64_t>();
}

json binary_data(const std::string& bytes) {
  return json::binary(std::vector<std::uint8_t>(bytes.begin(), bytes.end()));
}

// Bytes from a `data` param: CBOR binary, or a string for peers that cannot send binary.
std::optional<std::string> data_param(const json& p) {
  auto it = p.find("data");
  if (it == p.end()) return std::string();
  if (it->is_binary()) return std::string(it->get_binary().begin(), it->get_binary().end());
  if (it->is_string()) return it->get<std::string>();
  return std::nullopt;
}

std::optional<int> parse_signal(const json& s) {
  if (s.is_number_integer()) {
    long long n = s.get<long long>();
    if (n >= 1 && n < NSIG) return static_cast<int>(n);
    return std::nullopt;
  }
  if (!s.is_string()) return std::nullopt;
  std::string name;
  for (char c : s.get<std::string>()) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (name.starts_with("SIG")) name = name.substr(3);
  if (!name.empty() && name.size() <= 3 && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    int n = std::stoi(name);
    return n >= 1 && n < NSIG ? std::optional(n) : std::nullopt;
  }
  // The contract's seven, plus the job-control ones a helper may pass through from the user.
  static const std::pair<const char*, int> kNames[] = {
      {"INT", SIGINT},   {"TERM", SIGTERM}, {"KILL", SIGKILL}, {"HUP", SIGHUP},   {"QUIT", SIGQUIT},  {"USR1", SIGUSR1},
      {"USR2", SIGUSR2}, {"CONT", SIGCONT}, {"STOP", SIGSTOP}, {"TSTP", SIGTSTP}, {"WINCH", SIGWINCH}};
  for (const auto& [n, v] : kNames)
    if (name == n) return v;
  return std::nullopt;
}

bool executable_file(const fs::path& p) {
  std::error_code e;
  return fs::is_regular_file(p, e) && ::access(p.c_str(), X_OK) == 0;
}

// As execvp does: a name with a slash is a path (relative to the run's cwd), else PATH is searched.
std::optional<fs::path> find_program(const std::string& name, const std::string& path_var, const fs::path& cwd) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    fs::path p = fs::path(name).is_absolute() ? fs::path(name) : cwd / name;
    return executable_file(p) ? std::optional(p) : std::nullopt;
  }
  std::size_t pos = 0;
  while (pos <= path_var.size()) {
    auto colon = path_var.find(':', pos);
    std::string dir = path_var.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
    fs::path p = (dir.empty() ? cwd : fs::path(dir)) / name;
    if (!p.is_absolute()) p = cwd / p;
    if (executable_file(p)) return p;
    if (colon == std::string::npos) break;
    pos = colon + 1;
  }
  return std::nullopt;
}

json exited_params(const std::string& id, const json& exit_json) {
  json out{{"id", id}};
  for (const char* key : {"exitCode", "signal", "endedAt", "logBytes"})
    if (exit_json.contains(key)) out[key] = exit_json[key];
  return out;
}

long long log_size(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? static_cast<long long>(st.st_size) : 0;
}

// Writes all bytes to a non-blocking fd, waiting for room up to the deadline.
std::expected<void, std::string> write_with_deadline(int fd, std::string_view bytes,
                                                     std::chrono::steady_clock::time_point deadline) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return std::unexpected(std::string(std::strerror(errno)));
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::unexpected(std::string("the run is not reading its input"));
    pollfd p{fd, POLLOUT, 0};
    ::poll(&p, 1, static_cast<int>(left.count()));
  }
  return {};
}

}  // namespace

// One attach stream: a thread that sends output.log from an offset, then waits on inotify.
struct RunMethods::Tailer {
  RunFiles files;
  std::string follower;  // run/attach's `follower`, echoed in each notification ("" = none)
  std::uint64_t offset = 0;
  std::shared_ptr<FrameWriter> writer;
  std::optional<PortWatch> ports;  // run/attach's `ports`: the run's listeners, told as run/port
  std::atomic<bool> stop{false};
  std::atomic<bool> done{false};
  int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  int follow_fd = -1;  // follow.lock, held shared while this stream lives
  std::thread thread;

  Tailer(RunFiles f, std::string who, std::uint64_t o, std::shared_ptr<FrameWriter> w)
      : files(std::move(f)), follower(std::move(who)), offset(o), writer(std::move(w)) {
    follow_fd = ::open(files.follow_lock().c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    // Blocking: run/list's probe holds it exclusively for an instant only.
    if (follow_fd >= 0 && ::flock(follow_fd, LOCK_SH) != 0) {
      ::close(follow_fd);
      follow_fd = -1;
    }
    if (follow_fd < 0) spdlog::warn("run {}: follow.lock: {}", files.id, std::strerror(errno));
  }
  ~Tailer() {
    stop = true;
    std::uint64_t one = 1;
    [[maybe_unused]] auto r = ::write(wake_fd, &one, sizeof one);
    if (thread.joinable()) thread.join();
    if (wake_fd >= 0) ::close(wake_fd);
    if (follow_fd >= 0) ::close(follow_fd);
  }

  // One notification of this stream, tagged with its follower.
  bool send(const char* method, json params) {
    if (!follower.empty()) params["follower"] = follower;
    return writer->send_notification(method, std::move(params));
  }

  void start() {
    thread = std::thread([this] {
      run();
      done = true;
    });
  }

  void run() {
    // The watch exists before the first read, so nothing appended after that read is missed.
    // The test hook stands for a box whose inotify instances are used up.
    static const bool no_inotify = std::getenv("FERRY_AGENT_TEST_NO_INOTIFY") != nullptr;
    int in = no_inotify ? -1 : ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    if (in < 0 || ::inotify_add_watch(in, files.dir.c_str(), IN_MODIFY | IN_CREATE | IN_MOVED_TO) < 0) {
      // Out of inotify instances (fs.inotify.max_user_instances): stream anyway, by polling.
      spdlog::warn("run {}: inotify: {}; polling the log every {} ms", files.id,
                   no_inotify ? "disabled by FERRY_AGENT_TEST_NO_INOTIFY" : std::strerror(errno), kFallbackPollMs);
      if (in >= 0) ::close(in);
      in = -1;
    }
    int log = ::open(files.output().c_str(), O_RDONLY | O_CLOEXEC);
    stream(in, log);
    if (log >= 0) ::close(log);
    if (in >= 0) ::close(in);
  }

  // The run's listeners that opened or closed since the last look (`ended`: only those that closed);
  // false once the link is gone.
  bool send_port_changes(bool ended = false) {
    for (const auto& c : ports->poll(/*look_for_new=*/!ended))
      if (!send("run/port", json{{"id", files.id}, {"port", c.port}, {"address", c.address}, {"open", c.open}}))
        return false;
    return true;
  }

  void stream(int in, int log) {
    if (log < 0) {
      spdlog::error("run {}: open output.log: {}", files.id, std::strerror(errno));
      return;
    }
    // At once on the first pass: a run found lost ends its stream now. The ports one period on:
    // a look costs two reads of /proc/net/tcp{,6} (milliseconds on some kernels), which a run
    // that ends at once would otherwise wait out before its run/exited.
    auto next_liveness = std::chrono::steady_clock::now();
    auto next_ports = next_liveness + std::chrono::milliseconds(kPortPollMs);
    while (!stop) {
      // exit.json is written after the last record: seen first, the read below gets everything.
      auto exit_json = read_json_file(files.exit());
      while (!stop) {
        auto chunk = read_records(log, offset, kMaxRecordData);
        if (!chunk) {
          spdlog::error("run {}: {}", files.id, chunk.error());
          return;
        }
        if (chunk->records.empty()) break;
        for (auto& rec : chunk->records) {
          if (stop) return;
          if (!send("run/output", json{{"id", files.id},
                                                            {"offset", rec.offset},
                                                            {"stream", rec.stream},
                                                            {"data", binary_data(rec.data)}}))
            return;
        }
        offset = chunk->next;
      }
      if (stop) return;
      if (exit_json) {
        if (ports) (void)send_port_changes(/*ended=*/true);  // its listeners went with it: said before the end
        send("run/exited", exited_params(files.id, *exit_json));
        return;
      }
      auto now = std::chrono::steady_clock::now();
      if (ports && now >= next_ports) {
        next_ports = now + std::chrono::milliseconds(kPortPollMs);
        if (!send_port_changes()) return;
      }
      if (now < next_liveness) {
        auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_liveness - now).count() + 1;
        if (ports) wait = std::min<long long>(wait, std::chrono::duration_cast<std::chrono::milliseconds>(next_ports - now).count() + 1);
        if (in < 0) wait = std::min<long long>(wait, kFallbackPollMs);
        pollfd fds[2] = {{in, POLLIN, 0}, {wake_fd, POLLIN, 0}};  // poll skips a negative fd
        int n = ::poll(fds, 2, static_cast<int>(wait));
        if (n < 0 && errno != EINTR) return;
        if (n > 0 && (fds[0].revents & POLLIN)) {
          char buf[4096];
          while (::read(in, buf, sizeof buf) > 0) {
          }
        }
        continue;
      }
      next_liveness = now + std::chrono::milliseconds(kLivenessCheckMs);
      {
        auto meta = read_json_file(files.meta());
        long long sup = meta ? meta->value("supervisorPid", 0LL) : 0;
        if (!supervisor_alive(sup, files.id) && !fs::exists(files.exit())) {
          // Everything that will ever be in the log is there: send it, then say the run is lost.
          while (auto chunk = read_records(log, offset, kMaxRecordData)) {
            if (chunk->records.empty() || stop) break;
            for (auto& rec : chunk->records)
              if (!send("run/output", json{{"id", files.id},
                                                                {"offset", rec.offset},
                                                                {"stream", rec.stream},
                                                                {"data", binary_data(rec.data)}}))
                return;
            offset = chunk->next;
          }
          if (!stop) send("run/exited", json{{"id", files.id}, {"lost", true}, {"logBytes", offset}});
          return;
        }
      }
    }
  }
};

RunMethods::RunMethods(RootPath root, fs::path state_dir, std::shared_ptr<FrameWriter> writer)
    : root_(std::move(root)), store_(std::move(state_dir)), writer_(std::move(writer)) {}

RunMethods::~RunMethods() { stop_all(); }

void RunMethods::stop_all() {
  kill_abandoned_runs();
  pending_.clear();
  tailers_.clear();
}

void RunMethods::kill_abandoned_runs() {
  for (const auto& id : std::exchange(kill_on_disconnect_, {})) {
    auto run = store_.find(id);
    if (!run) continue;
    auto status = read_status(*run);
    if (!status || status->state != "running") continue;
    const long long pgid = status->meta.value("pgid", 0LL);
    if (pgid <= 1) continue;
    cancel_slurm_job(run->dir);
    if (::kill(static_cast<pid_t>(-pgid), SIGKILL) == 0)
      spdlog::warn("run {}: its helper went away after asking it to stop: sent SIGKILL", id);
  }
}

// Whether an agent streams the run now (one that is alive: the lock goes with its process).
static bool followed(const RunFiles& run) {
  int fd = ::open(run.follow_lock().c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return held;
}

namespace {
std::string stream_key(const std::string& id, const std::string& follower) { return follower.empty() ? id : id + '\n' + follower; }
}  // namespace

void RunMethods::stop_stream(const std::string& id, const std::string& follower) {
  tailers_.erase(stream_key(id, follower));
  std::erase_if(pending_, [&](const auto& t) { return t->files.id == id && t->follower == follower; });
}

void RunMethods::stop_streams(const std::string& id) {
  std::erase_if(tailers_, [&](const auto& kv) { return kv.second->files.id == id; });
  std::erase_if(pending_, [&](const auto& t) { return t->files.id == id; });
}

// run/attach's and run/detach's optional `follower`: who, of several behind this agent's helper,
// follows (a terminal riding the helper's link); nullopt when it is not a short string.
// run/start's `attach` ({follower?, ports?}): the new run streams from offset 0 as run/attach would
// have it, without that second round trip before the first byte.
struct StartAttach {
  std::string follower;
  bool ports = false;
};

static std::optional<std::string> follower_param(const json& p);

static std::expected<std::optional<StartAttach>, std::string> start_attach_param(const json& p) {
  auto it = p.find("attach");
  if (it == p.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return std::unexpected("attach must be an object: {follower?, ports?}");
  auto follower = follower_param(*it);
  if (!follower) return std::unexpected("attach.follower must be a string of at most 64 characters, one line");
  auto ports = it->find("ports");
  if (ports != it->end() && !ports->is_boolean()) return std::unexpected("attach.ports must be a boolean");
  return StartAttach{*follower, ports != it->end() && ports->get<bool>()};
}

static std::optional<std::string> follower_param(const json& p) {
  auto it = p.find("follower");
  if (it == p.end()) return std::string();
  if (!it->is_string() || it->get<std::string>().size() > 64 || it->get<std::string>().find('\n') != std::string::npos)
    return std::nullopt;
  return it->get<std::string>();
}

void RunMethods::start_pending_streams() {
  std::erase_if(tailers_, [](const auto& kv) { return kv.second->done.load(); });
  for (auto& t : pending_) {
    t->start();
    tailers_[stream_key(t->files.id, t->follower)] = std::move(t);
  }
  pending_.clear();
}

std::expected<void, std::string> RunMethods::check_offset_cached(const std::string& id, int fd, std::uint64_t offset) {
  constexpr std::size_t kMaxKnown = 4096;
  auto& known = boundaries_[id];
  if (known.contains(offset)) return {};
  std::uint64_t from = 0;
  if (auto it = known.upper_bound(offset); it != known.begin()) from = *std::prev(it);
  auto ok = check_offset(fd, offset, from);
  if (ok) {
    if (known.size() >= kMaxKnown) known.clear();
    known.insert(offset);
  }
  return ok;
}

void RunMethods::bind(protocol::BindingTable& table) {
  using Member = Response (RunMethods::*)(const protocol::Request&);
  static constexpr std::pair<std::string_view, Member> kMethods[] = {
      {"run/start", &RunMethods::start},   {"run/attach", &RunMethods::attach}, {"run/detach", &RunMethods::detach},
      {"run/input", &RunMethods::input},   {"run/signal", &RunMethods::signal}, {"run/resize", &RunMethods::resize},
      {"run/list", &RunMethods::list},     {"run/read", &RunMethods::read},     {"run/remove", &RunMethods::remove},
  };
  for (const auto& [name, member] : kMethods) {
    bind_raw(table, name, [this, member](const protocol::Request& r) -> Response {
      if (r.params.is_null()) {  // absent params mean {} (run/list needs none)
        protocol::Request with_params{r.id, r.method, json::object()};
        return (this->*member)(with_params);
      }
      if (!r.params.is_object()) return bad(r, "params must be an object");
      return (this->*member)(r);
    });
  }
}

Response RunMethods::start(const protocol::Request& r) {
  const json& p = r.params;
  auto argv_it = p.find("argv");
  if (argv_it == p.end() || !argv_it->is_array() || argv_it->empty())
    return bad(r, "argv must be a non-empty array of strings");
  std::vector<std::string> argv;
  for (const auto& a : *argv_it) {
    if (!a.is_string()) return bad(r, "argv must be a non-empty array of strings");
    argv.push_back(a.get<std::string>());
    if (argv.back().find('\0') != std::string::npos) return bad(r, "argv contains a NUL byte");
  }
  std::string cwd = ".";
  if (p.contains("cwd")) {
    auto c = string_param(p, "cwd");
    if (!c) return bad(r, "cwd must be a string relative to the root");
    cwd = *c;
  }
  bool tty = false;
  if (p.contains("tty")) {
    if (!p["tty"].is_boolean()) return bad(r, "tty must be a boolean");
    tty = p["tty"].get<bool>();
  }
  unsigned cols = 80, rows = 24;
  for (auto [key, out] : {std::pair{"cols", &cols}, std::pair{"rows", &rows}}) {
    if (!p.contains(key)) continue;
    auto v = uint_param(p, key);
    if (!v || *v < 1 || *v > 10000) return bad(r, std::string(key) + " must be an integer from 1 to 10000");
    *out = static_cast<unsigned>(*v);
  }
  std::optional<protocol::SlurmJobOptions> slurm;
  if (auto it = p.find("slurm"); it != p.end() && !it->is_null()) {
    auto o = protocol::slurm_options_from_json(*it);
    if (!o) return bad(r, o.error());
    if (tty) return bad(r, "a Slurm run has no tty: its output comes from the job's files");
    slurm = *o;
  }
  auto attach = start_attach_param(p);
  if (!attach) return bad(r, attach.error());
  auto resolved = root_.resolve(cwd, FollowFinal::yes);
  if (!resolved) return bad(r, "cwd: " + resolved.error());
  std::error_code e;
  if (!fs::is_directory(resolved->absolute, e)) return bad(r, "cwd '" + cwd + "' is not a directory under the root");

  // The agent's environment plus params.env, which wins.
  std::map<std::string, std::string> env;
  for (char** kv = environ; kv && *kv; ++kv) {
    std::string_view s(*kv);
    auto eq = s.find('=');
    if (eq != std::string_view::npos) env[std::string(s.substr(0, eq))] = std::string(s.substr(eq + 1));
  }
  json env_keys = json::array();
  if (auto it = p.find("env"); it != p.end() && !it->is_null()) {
    if (!it->is_object()) return bad(r, "env must be an object of strings");
    for (const auto& [k, v] : it->items()) {
      if (!v.is_string() || k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos ||
          v.get<std::string>().find('\0') != std::string::npos)
        return bad(r, "env: '" + k + "' is not a valid NAME=string entry");
      env[k] = v.get<std::string>();
      env_keys.push_back(k);
    }
  }
  if (tty && !env.contains("TERM")) env["TERM"] = "xterm-256color";
  auto program = slurm ? std::optional<fs::path>(agent_file_path())
                       : find_program(argv[0], env.contains("PATH") ? env["PATH"] : "/usr/bin:/bin", resolved->absolute);
  if (!program) return bad(r, "command '" + argv[0] + "' not found" + (argv[0].find('/') == std::string::npos ? " on PATH" : ""));

  auto now = std::chrono::system_clock::now();
  auto run = store_.create(now);
  if (!run) return io_error(r, run.error());
  const std::vector<std::string> shown = argv;
  if (slurm) {
    // The run's process is the follower; the program runs in the job (slurm_job.hpp).
    if (auto w = write_slurm_request(run->dir, *slurm, argv, resolved->absolute, env); !w) return io_error(r, w.error());
    argv = {program->string(), "--slurm-job", run->dir.string()};
  }
  json env_list = json::array();
  for (const auto& [k, v] : env) env_list.push_back(k + "=" + v);
  std::string started_at = iso_utc_ms(now);
  json spec{{"argv", argv},
            {"displayArgv", shown},
            {"program", program->string()},
            {"cwd", resolved->relative.empty() ? "." : resolved->relative},
            {"cwdAbsolute", resolved->absolute.string()},
            {"root", root_.root().string()},
            {"envKeys", env_keys},
            {"envList", env_list},
            {"tty", tty},
            {"cols", cols},
            {"rows", rows},
            {"startedAt", started_at}};
  // Read and removed by the supervisor within milliseconds: no fsync on the start's path.
  if (!write_json_atomic(run->spec(), spec, 0600, Sync::none)) {
    fs::remove_all(run->dir, e);
    return io_error(r, "cannot write " + run->spec().string() + ": " + std::strerror(errno));
  }
  auto launched = launch_supervisor(*run, kLaunchTimeout);
  if (!launched) {
    // A supervisor that is late may still start the run: its directory stays for run/list.
    if (launched.error().supervisor_gone) fs::remove_all(run->dir, e);
    return bad(r, launched.error().message);
  }
  spdlog::info("run {} started: pid {}, supervisor {}", run->id, launched->pid, launched->supervisor_pid);
  json result{{"id", run->id}, {"pid", launched->pid}, {"startedAt", started_at}};
  // The supervisor wrote meta.json before its report, so the run has a status; were it unreadable,
  // no `attached` in the reply, and the helper asks run/attach as it would have.
  if (auto status = *attach ? read_status(*run) : std::nullopt) {
    open_stream(*run, *status, (*attach)->follower, 0, (*attach)->ports);
    result["attached"] = json{{"offset", 0}, {"state", status->state}};
  }
  return protocol::make_result(r.id, std::move(result));
}

Response RunMethods::attach(const protocol::Request& r) {
  auto id = string_param(r.params, "id");
  if (!id) return bad(r, "id must be a string");
  auto offset = uint_param(r.params, "offset");
  if (!offset) return bad(r, "offset must be an unsigned integer");
  auto follower = follower_param(r.params);
  if (!follower) return bad(r, "follower must be a string of at most 64 characters, one line");
  auto run = store_.find(*id);
  if (!run) return bad(r, run.error());
  auto status = read_status(*run);
  if (!status) return bad(r, "run " + *id + " has not started");
  int log = ::open(run->output().c_str(), O_RDONLY | O_CLOEXEC);
  if (log < 0) return io_error(r, "open " + run->output().string() + ": " + std::strerror(errno));
  auto ok = check_offset_cached(*id, log, *offset);
  ::close(log);
  if (!ok) return bad(r, ok.error());
  open_stream(*run, *status, *follower, *offset, r.params.value("ports", false));
  return protocol::make_result(r.id, json{{"id", *id}, {"offset", *offset}, {"state", status->state}});
}

void RunMethods::open_stream(const RunFiles& run, const RunStatus& status, const std::string& follower, std::uint64_t offset,
                             bool ports) {
  stop_stream(run.id, follower);
  auto tailer = std::make_unique<Tailer>(run, follower, offset, writer_);
  const long long pgid = status.meta.value("pgid", 0LL);
  if (ports && pgid > 1 && status.state == "running") tailer->ports.emplace(static_cast<pid_t>(pgid));
  pending_.push_back(std::move(tailer));
}

Response RunMethods::detach(const protocol::Request& r) {
  auto id = string_param(r.params, "id");
  if (!id) return bad(r, "id must be a string");
  auto follower = follower_param(r.params);
  if (!follower) return bad(r, "follower must be a string of at most 64 characters, one line");
  stop_stream(*id, *follower);
  kill_on_disconnect_.erase(*id);  // a helper that lets go on purpose leaves the run be
  return protocol::make_result(r.id, json::object());
}

Response RunMethods::input(const protocol::Request& r) {
  auto id = string_param(r.params, "id");
  if (!id) return bad(r, "id must be a string");
  auto data = data_param(r.params);
  if (!data) return bad(r, "data must be binary (or a string)");
  bool eof = false;
  if (r.params.contains("eof")) {
    if (!r.params["eof"].is_boolean()) return bad(r, "eof must be a boolean");
    eof = r.params["eof"].get<bool>();
  }
  auto run = store_.find(*id);
  if (!run) return bad(r, run.error());
  auto status = read_status(*run);
  if (!status) return bad(r, "run " + *id + " has not started");
  if (status->state != "running") return bad(r, "run " + *id + " has " + (status->state == "lost" ? "been lost" : "exited"));
  auto deadline = std::chrono::steady_clock::now() + kInputTimeout;
  if (!data->empty()) {
    // Non-blocking open: ENXIO when no supervisor holds the FIFO, instead of hanging.
    int fd = ::open(run->stdin_fifo().c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return bad(r, "run " + *id + " is not accepting input: " + std::strerror(errno));
    auto w = write_with_deadline(fd, *data, deadline);
    ::close(fd);
    if (!w) return io_error(r, "run " + *id + ": " + w.error());
  }
  if (eof) {
    int fd = ::open(run->control_fifo().c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return bad(r, "run " + *id + " is not accepting input: " + std::strerror(errno));
    auto w = write_with_deadline(fd, "eof\n", deadline);
    ::close(fd);
    if (!w) return io_error(r, "run " + *id + ": " + w.error());
  }
  return protocol::make_result(r.id, json::object());
}

Response RunMethods::signal(const protocol::Request& r) {
  auto id = string_param(r.params, "id");
  if (!id) return bad(r, "id must be a string");
  auto sig = r.params.contains("signal") ? parse_signal(r.params["signal"]) : std::nullopt;
  if (!sig) return bad(r, "signal must be INT, TERM, KILL, HUP, QUIT, USR1, USR2, CONT, STOP, TSTP, WINCH or a signal number");
  auto run = store_.find(*id);
  if (!run) return bad(r, run.error());
  auto status = read_status(*run);
  if (!status) return bad(r, "run " + *id + " has not started");
  if (status->state == "exited") return bad(r, "run " + *id + " has exited");
  long long pgid = status->meta.value("pgid", 0LL);
  if (pgid <= 1) return io_error(r, "run " + *id + " has no process group in meta.json");
  bool kill_on_disconnect = false;
  if (r.params.contains("killOnDisconnect")) {
    if (!r.params["killOnDisconnect"].is_boolean()) return bad(r, "killOnDisconnect must be a boolean");
    kill_on_disconnect = r.params["killOnDisconnect"].get<bool>();
  }
  // A KILL ends the follower of a Slurm run before it could cancel its job: cancel it here.
  if (*sig == SIGKILL) cancel_slurm_job(run->dir);
  if (::kill(static_cast<pid_t>(-pgid), *sig) != 0) {
    if (errno == ESRCH) return bad(r, "run " + *id + " has exited");
    return io_error(r, "kill run " + *id + ": " + std::strerror(errno));
  }
  if (kill_on_disconnect) kill_on_disconnect_.insert(*id);
  return protocol::make_result(r.id, json::object());
}

Response RunMethods::resize(const protocol::Request& r) {
  auto id = string_param(r.params, "id");
  if (!id) return bad(r, "id must be a string");
  auto cols = uint_param(r.params, "cols");
  auto rows = uint_param(r.params, "rows");
  if (!cols || !rows || *cols < 1 || *rows < 1 || *cols > 10000 || *rows > 10000)
    return bad(r, "cols and rows must be integers from 1 to 10000");
  auto run = store_.find(*id);
  if (!run) return bad(r, run.error());
  auto status = read_status(*run);
  if (!status) return bad(r, "run " + *id + " has not started");
  if (!status->meta.value("tty", false)) return bad(r, "run " + *id + " has no tty");
  if (status->state != "running") return bad(r, "run " + *id + " has exited");
  int fd = ::open(run->control_fifo().c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return bad(r, "run " + *id + " is not running: " + std::strerror(errno));
  auto w = write_with_deadline(fd, "resize " + std::to_string(*cols) + " " + std::to_string(*rows) + "\n",
                               std::chrono::steady_clock::now() + kInputTimeout);
  ::close(fd);
  if (!w) return io_error(r, "run " + *id + ": " + w.error());
  return protocol::make_result(r.id, json::object());
}

Response RunMethods::list(const protocol::Request& r) {
  bool all = false, running = false;
  for (auto [key, out] : {std::pair{"all", &all}, std::pair{"running", &running}}) {
    if (!r.params.contains(key)) continue;
    if (!r.params[key].is_boolean()) return bad(r, std::string(key) + " must be a boolean");
    *out = r.params[key].get<bool>();
  }
  json runs = json::array();
  for (const auto& id : store_.ids(/*unended_only=*/running)) {
    auto run = store_.find(id);
    if (!run) continue;
    auto status = read_status(*run);
    if (!status || (running && status->state != "running")) continue;
    const json& m = status->meta;
    std::string root = m.value("root", "");
    if (!all && root != root_.root().string()) continue;
    json entry{{"id", id},
               {"argv", m.value("argv", json::array())},
               {"cwd", m.value("cwd", ".")},
               {"root", root},
               {"state", status->state},
               {"pid", m.value("pid", 0LL)},
               {"tty", m.value("tty", false)},
               {"startedAt", m.value("startedAt", "")}};
    for (const char* key : {"group", "label"})
      if (m.contains(key) && m[key].is_string()) entry[key] = m[key];
    if (status->state == "running") entry["followed"] = followed(*run);
    if (auto job = slurm_job_id(run->dir); !job.empty()) {
      entry["slurmJob"] = job;
      if (auto state = slurm_job_state(run->dir)) entry["slurmState"] = protocol::to_json(*state);
    }
    if (status->exit) {
      for (const char* key : {"endedAt", "exitCode", "signal", "logBytes"})
        if (status->exit->contains(key)) entry[key] = (*status->exit)[key];
    }
    if (!entry.contains("logBytes")) entry["logBytes"] = log_size(run->output());
    runs.push_back(std::move(entry));
  }
  return protocol::make_result(r.id, json{{"runs", std::move(runs)}});
}

Response RunMethods::read(const protocol::Request& r) {
  auto id = string_param(r.params, "id");
  if (!id) return bad(r, "id must be a string");
  std::uint64_t offset = 0;
  if (r.params.contains("offset")) {
    auto o = uint_param(r.params, "offset");
    if (!o) return bad(r, "offset must be an unsigned integer");
    offset = *o;
  }
  std::size_t max_bytes = kDefaultReadBytes;
  if (r.params.contains("maxBytes")) {
    auto m = uint_param(r.params, "maxBytes");
    if (!m || *m == 0) return bad(r, "maxBytes must be a positive integer");
    max_bytes = static_cast<std::size_t>(std::min<std::uint64_t>(*m, kMaxReadBytes));
  }
  auto run = store_.find(*id);
  if (!run) return bad(r, run.error());
  auto status = read_status(*run);
  if (!status) return bad(r, "run " + *id + " has not started");
  int log = ::open(run->output().c_str(), O_RDONLY | O_CLOEXEC);
  if (log < 0) return io_error(r, "open " + run->output().string() + ": " + std::strerror(errno));
  auto ok = check_offset_cached(*id, log, offset);
  if (!ok) {
    ::close(log);
    return bad(r, ok.error());
  }
  auto chunk = read_records(log, offset, max_bytes);
  ::close(log);
  if (!chunk) return io_error(r, chunk.error());
  if (chunk->next != offset) boundaries_[*id].insert(chunk->next);
  json records = json::array();
  for (auto& rec : chunk->records)
    records.push_back(json{{"offset", rec.offset}, {"stream", rec.stream}, {"data", binary_data(rec.data)}});
  return protocol::make_result(r.id, json{{"records", std::move(records)}, {"next", chunk->next}, {"state", status->state}});
}

Response RunMethods::remove(const protocol::Request& r) {
  auto id = string_param(r.params, "id");
  if (!id) return bad(r, "id must be a string");
  auto run = store_.find(*id);
  if (!run) return bad(r, run.error());
  auto status = read_status(*run);
  if (status && status->state == "running") return bad(r, "run " + *id + " is still running");
  stop_streams(*id);
  boundaries_.erase(*id);
  std::error_code e;
  fs::remove_all(run->dir, e);
  if (e) return io_error(r, "remove " + run->dir.string() + ": " + e.message());
  return protocol::make_result(r.id, json::object());
}

}  // namespace ferry::agent::run
