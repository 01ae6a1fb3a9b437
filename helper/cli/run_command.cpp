// `ferry run`, `ferry runs`, `ferry attach`, `ferry logs`, `ferry kill`: remote runs from a
// terminal. Runs live on the box (the agent's supervisor), so this process only starts, streams,
// signals and re-attaches; a dropped SSH link is waited out and the stream resumes at the next
// offset. Remote stdout/stderr go to ours as raw bytes; the exit status is the remote one.
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <chrono>
#include <set>
#include <ctime>
#include <future>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/full_io.hpp"
#include "common/terminal.hpp"
#include "common/terminal_input.hpp"
#include "common/wakeup.hpp"
#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cli/live_server.hpp"
#include "helper/cli/relay_endpoint.hpp"
#include "helper/cloud/cost_estimate.hpp"
#include "helper/run/slurm_allocation.hpp"
#include "protocol/slurm_alloc.hpp"
#include "helper/deploy/launch_target.hpp"
#include "helper/deploy/project_config.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/run/interrupt_escalation.hpp"
#include "helper/run/launch_spec.hpp"
#include "helper/run/run_client.hpp"
#include "helper/deploy/host_spec.hpp"
#include "helper/run/port_forwarder.hpp"
#include "helper/run/run_follower.hpp"
#include "helper/sync/sync_engine.hpp"
#include "helper/sync/mapping_target.hpp"
#include "protocol/link_state.hpp"
#include "protocol/messages_run.hpp"

namespace ferry::cli {
namespace {

namespace fs = std::filesystem;
using run::kFerryFailure;
using run::kUsageFailure;

// ---- the project's endpoint, with reconnect notes ----

// What on_state reports reaches the follower of the moment (if any) and a person on stderr.
struct LinkNotes {
  std::mutex mutex;
  run::RunFollower* follower = nullptr;
  bool was_connected = false;
  bool down = false;
  unsigned drops = 0;  // times the link went down
};

struct RunLink {
  deploy::ProjectConfig config;
  std::unique_ptr<remote::Endpoint> endpoint;
  sync::SyncTarget target;
  std::string remote_base;   // the mapping under the agent's root ("" = the root)
  std::string mapping_root;  // absolute on the box
  std::shared_ptr<LinkNotes> notes = std::make_shared<LinkNotes>();
  RelayEndpoint* live = nullptr;  // `endpoint` when it rides the project's live ferry
};

void on_link_state(LinkNotes& notes, const remote::HostState& s) {
  std::lock_guard lock(notes.mutex);
  if (s.state == protocol::LinkState::connected) {
    if (notes.was_connected && notes.down) {
      std::cerr << "ferry: reconnected to " << s.host << "; resuming the output\n";
      if (notes.follower) notes.follower->link_restored();
    }
    notes.was_connected = true;
    notes.down = false;
  } else if (s.state == protocol::LinkState::reconnecting && notes.was_connected && !notes.down) {
    notes.down = true;
    ++notes.drops;
    std::cerr << "ferry: lost the connection to " << s.host << (s.message.empty() ? "" : " (" + s.message + ")")
              << "; the run goes on, reconnecting...\n";
    if (notes.follower) notes.follower->link_lost();
  }
}

std::expected<RunLink, int> connect_project(const GlobalOptions& g, deploy::ProjectConfig config, const std::string& who) {
  RunLink link;
  link.config = std::move(config);
  sync::ProjectEndpointOptions o = cli_endpoint_options(g);
  o.reconnect = true;  // runs outlive a dropped link; so does following them
  o.on_state = [notes = link.notes](const remote::HostState& s) { on_link_state(*notes, s); };
  auto made = sync::make_project_endpoint(link.config, o);
  if (!made) {
    std::cerr << who << ": " << made.error().message << "\n";
    return std::unexpected(kUsageFailure);
  }
  if (!connect_cli_endpoint(*made, who)) return std::unexpected(kFerryFailure);
  link.endpoint = std::move(made->endpoint);
  link.target = made->target;  // with `protect`, which the run's sync honours too
  link.remote_base = link.target.remote_base;
  link.mapping_root = made->mapping_root;
  return link;
}

// Through the project's live ferry (a daemon, the editor's server) when one of this build is
// linked, so no login of its own; else its own link. -F and --trust go their own way, as a sync
// does. The live ferry's link state reaches the follower as its own would; should the live ferry
// go away, what follows fails (the run goes on).
std::expected<RunLink, int> ride_project(const GlobalOptions& g, deploy::ProjectConfig config, const std::string& who) {
  auto relay = relay_for(g, config);
  if (!relay) return connect_project(g, std::move(config), who);
  RunLink link;
  link.config = std::move(config);
  link.notes->was_connected = true;
  link.target = sync::mapping_target(link.config, link.config.mappings.front());
  link.remote_base = link.target.remote_base;
  link.mapping_root = relay->mapping_root();
  link.live = relay.get();
  relay->on_state([notes = link.notes](const remote::HostState& s) { on_link_state(*notes, s); });
  relay->on_closed([notes = link.notes, pid = relay->pid()](const std::string& why) {
    std::lock_guard lock(notes->mutex);
    if (notes->follower)
      notes->follower->fail("the live ferry (pid " + std::to_string(pid) + ") went away (" + why + "); run " +
                            notes->follower->id() + " goes on (`ferry attach " + notes->follower->id() + "` follows it again)");
  });
  link.endpoint = std::move(relay);
  return link;
}

std::expected<RunLink, int> open_project_riding(const GlobalOptions& g, const std::string& who) {
  auto config = cli_project_or_usage(g, who);
  if (!config) return std::unexpected(config.error());
  return ride_project(g, std::move(*config), who);
}

// ---- the terminal ----

constexpr int kStdin = 0, kStdout = 1, kStderr = 2;

// The terminal's size for the remote pty; 0x0 when there is none.
std::pair<int, int> terminal_size() {
  for (int fd : {1, 0, 2})
    if (auto size = platform::terminal_size(fd)) return {size->columns, size->rows};
  return {0, 0};
}

// False when the reader is gone (EPIPE): the follow loops then stop instead of streaming a whole
// run into a closed pipe. Other failures drop the bytes (nowhere else to put them).
bool write_all(int fd, std::string_view data) {
  return posix::write_stream(fd, data.data(), data.size()) >= 0 || errno != EPIPE;
}

// The agent's refusal of a run request, with where it was asked and, for an id it does not know,
// where to find the right one.
std::string run_error(const std::string& who, const RunLink& link, const remote::ResponseError& e) {
  std::string out = who + ": " + e.message + " (on " + link.endpoint->description() + ")";
  if (run::is_unknown_run(e)) out += "; `ferry runs` lists this project's runs there, `ferry runs --all` every project's";
  return out;
}

// run/start refused: where, and what to change for the usual causes.
std::string start_error(const std::string& who, const RunLink& link, const remote::ResponseError& e) {
  std::string out = who + ": " + e.message + " (on " + link.endpoint->description() + ")";
  if (e.message.find("not found") != std::string::npos)
    out += "; install it there, give its full path, or set \"interpreter\" in ferry.json for Python";
  else if (e.message.find("cwd") != std::string::npos)
    out += "; --cwd is relative to the mapping root " + link.mapping_root + " and must exist there (create it locally, then ferry sync)";
  return out;
}

// A note on stderr that reads right in raw mode too.
void note(bool raw, const std::string& text) { write_all(kStderr, text + (raw ? "\r\n" : "\n")); }

// ---- following a run ----

struct FollowOptions {
  bool forward_interrupts = true;  // Ctrl-C escalation to the run; else Ctrl-C just stops following
  bool forward_stdin = false;
  bool tty = false;
  bool stderr_only = false;        // ferry logs --stderr-only: stream 2 only, to stdout
  bool forward_ports = false;      // ports the run listens on forward themselves (ferry.json autoForwardPorts)
  // ferry run: its start attached the stream (RunClient::start's `attach`) when the link had
  // dropped this many times; the follower adopts it unless it dropped since.
  std::optional<unsigned> attached_at_drops;
};

// Whether follow_run wants run/port events: ports forward themselves (a Slurm job's processes are
// on a node the login agent cannot look into).
bool wants_ports(const RunLink& link, const FollowOptions& o) {
  return o.forward_ports && link.config.auto_forward_ports.enabled && !link.config.slurm;
}

// Streams run `id` from `offset` until it ends; returns ferry's exit status.
int follow_run(RunLink& link, run::RunClient& client, const std::string& id, std::uint64_t offset,
               const FollowOptions& o, const std::string& who) {
  std::atomic<bool> reader_gone{false};
  // Ports the run listens on, forwarded and announced on the forwarder's thread; made before the
  // follower, so the follower has stopped telling it anything before it goes.
  std::atomic<bool> raw_notes{false};
  std::optional<run::PortForwarder> ports;
  if (wants_ports(link, o))
    ports.emplace(*link.endpoint, link.config.auto_forward_ports, link.config.host == deploy::kLocalHost,
                  [&raw_notes](const run::PortEvent& e, const std::optional<run::PortForward>& f, const std::string& error) {
                    note(raw_notes, run::describe_port_event(e, f, error));
                  });
  run::RunFollower follower(client, id, offset, [&o, &reader_gone](const run::OutputRecord& r) {
    bool err = r.stream == run::Stream::stderr_stream;
    if (o.stderr_only && !err) return;
    const int fd = err && !o.stderr_only ? kStderr : kStdout;
    if (!write_all(fd, r.data) && fd == kStdout) reader_gone = true;
  });
  if (ports) follower.watch_ports([&ports](const run::PortEvent& e) { ports->on_port(e); });
  {
    std::lock_guard lock(link.notes->mutex);
    link.notes->follower = &follower;
    if (o.attached_at_drops) follower.adopt_start_attach(!link.notes->down && link.notes->drops == *o.attached_at_drops);
  }
  struct Unhook {
    LinkNotes& notes;
    ~Unhook() {
      std::lock_guard lock(notes.mutex);
      notes.follower = nullptr;
    }
  } unhook{*link.notes};

  // Ctrl-C escalates on the run (or, for logs, ends the following); SIGTERM, SIGHUP, a closed
  // console detach. With --tty the terminal is raw, so a Ctrl-C typed is a byte for the remote pty.
  platform::StopRequests stops;
  std::optional<platform::TerminalInput> input;
  if (o.forward_stdin) input.emplace(o.tty);
  const bool is_raw = input && input->raw();
  raw_notes = is_raw;
  run::InterruptEscalation escalation;
  bool stdin_open = o.forward_stdin;
  if (o.tty) {
    auto [cols, rows] = terminal_size();
    if (cols > 0) (void)client.resize(id, cols, rows);
  }

  for (;;) {
    if (reader_gone) {
      note(is_raw, who + ": stdout was closed (its reader went away); stopped following run " + id +
                       ", which goes on (`ferry logs " + id + "` shows its output, `ferry kill " + id + "` stops it)");
      (void)client.detach(id);
      return exit_status::kReaderGone;
    }
    if (auto failed = follower.failed()) {
      note(is_raw, who + ": " + *failed);
      return follower.next_offset() == offset && failed->find("run") != std::string::npos ? kUsageFailure : kFerryFailure;
    }
    if (follower.finished()) break;
    if (follower.needs_attach()) {
      auto r = follower.attach();
      if (!r && run::is_unknown_run(r.error())) {
        note(is_raw, run_error(who, link, r.error()));
        return kUsageFailure;
      }
      continue;
    }
    std::vector<platform::Wakeup*> waits = {&follower.wakeup(), &stops.wakeup()};
    if (input) waits.push_back(&input->wakeup());
    platform::wait_any(waits);
    follower.drain();
    switch (stops.take()) {
      case platform::StopKind::none:
        break;
      case platform::StopKind::interrupt:
        if (!o.forward_interrupts) return exit_status::kInterrupted;
        // Should ferry be killed now (an IDE's second Stop), the agent kills the run.
        if (auto step = escalation.next(id); auto sent = client.signal(id, step.signal, /*kill_on_disconnect=*/true))
          note(is_raw, "ferry: " + step.note);
        else
          note(is_raw, who + ": could not signal run " + id + ": " + sent.error().message);
        break;
      case platform::StopKind::terminate:
        note(is_raw, "ferry: stopped following run " + id + " (it goes on; `ferry attach " + id + "` resumes)");
        (void)client.detach(id);
        return exit_status::kTerminated;
    }
    // A run that ended while we waited takes no input: its stdin's end would be one more round trip.
    if (!input || follower.finished()) continue;
    auto taken = input->take();
    if (taken.resized && o.tty) {
      auto [cols, rows] = terminal_size();
      if (cols > 0) (void)client.resize(id, cols, rows);
    }
    if (stdin_open && (!taken.bytes.empty() || taken.eof)) {
      auto sent = client.input(id, taken.bytes, taken.eof);
      if (taken.eof || !sent) stdin_open = false;  // a finished run takes no more input
    }
  }
  auto exit = follower.exit();
  if (exit && exit->lost) note(is_raw, who + ": run " + id + " was " + run::describe(*exit));
  return exit ? run::exit_status(*exit) : kFerryFailure;
}

// ---- ferry run ----

// Runs of the same command still going with no ferry following them (one was killed, or the run
// was started --detach): said before the new run's output, so two copies of a training do not
// share a GPU unnoticed.
void note_runs_left_behind(const std::vector<run::RunInfo>& runs, const std::vector<std::string>& argv, const std::string& started) {
  for (const auto& r : runs) {
    // Riding a live ferry the list may be answered after the start: the new run is not left behind.
    if (r.id == started || r.state != "running" || r.followed != false || r.argv != argv) continue;
    std::cerr << "ferry run: run " << r.id << " (the same command, started " << r.started_at
              << ") is still running on the box with no ferry following it: `ferry attach " << r.id
              << "` follows it, `ferry kill " << r.id << "` stops it\n";
  }
}

struct RunCliOptions {
  std::string launch;  // a ferry.json launch entry; `command` then holds extra args
  std::vector<std::string> command;
  std::vector<std::string> env;
  std::string cwd;
  bool detach = false, tty = false, no_sync = false;
};

// sync/flush before a run: the default push (owned deletes only); conflicts are shown, not fatal.
// Riding a live ferry, its sync/push (its warm index) does it.
bool flush_sync(RunLink& link) {
  std::expected<sync::SyncSummary, ferry::Error> s;
  if (link.live) {  // the live ferry's push, on its warm index
    s = link.live->push_project(link.config.root);
  } else {
    sync::SyncEngine engine(*link.endpoint, link.target);
    sync::SyncOptions so;
    so.progress = terminal_progress("sync");
    so.waiting = waiting_note("ferry run");
    s = engine.push(so);
  }
  if (!s) {
    std::cerr << "ferry run: sync failed: " << s.error().message << " (--no-sync runs what is already there)\n";
    return false;
  }
  for (const auto& c : s->conflicts) std::cerr << "ferry run: sync conflict (not overwritten): " << c.path << ": " << c.message << "\n";
  for (const auto& e : s->errors) std::cerr << "ferry run: sync error: " << e << "\n";
  for (const auto& d : s->held_deletes) std::cerr << "ferry run: delete held (run ferry sync to confirm): " << d << "\n";
  if (s->files_sent || s->files_deleted) std::cerr << "ferry run: synced: " << s->one_line() << "\n";
  return true;
}

int run_run(const GlobalOptions& g, const RunCliOptions& o) {
  auto config = cli_project_or_usage(g, "ferry run");
  if (!config) return config.error();
  deploy::LaunchCommand what{o.command, o.cwd, config->env};
  if (!o.launch.empty()) {
    auto entry = deploy::find_launch(*config, o.launch);
    auto resolved = entry ? deploy::launch_command(*config, **entry, o.command, o.cwd)
                          : std::unexpected(entry.error());
    if (!resolved) {
      std::cerr << "ferry run: " << resolved.error() << "\n";
      return kUsageFailure;
    }
    what = std::move(*resolved);
  } else if (o.command.empty()) {
    std::cerr << "ferry run: nothing to run: ferry run -- script.py ARGS, or ferry run --launch NAME\n";
    return kUsageFailure;
  }
  auto link = ride_project(g, std::move(*config), "ferry run");
  if (!link) return link.error();
  run::LaunchRequest req;
  req.command = what.command;
  req.interpreter = link->config.interpreter;
  req.config_env = what.env;
  req.cli_env = o.env;
  req.cwd = what.cwd;
  req.remote_base = link->remote_base;
  req.mapping_root = link->mapping_root;
  req.tty = o.tty;
  if (o.tty) std::tie(req.cols, req.rows) = terminal_size();
  req.slurm = link->config.slurm;
  if (auto placed = run::place_run(*link->endpoint, link->config, req); !placed) {
    std::cerr << "ferry run: cannot ask Slurm for this project's allocation: " << placed.error().message << "\n";
    return kFerryFailure;
  } else if (*placed) {
    std::cerr << "ferry: into " << run::describe_allocation(**placed) << "\n";
  }
  auto spec = run::make_run_spec(req);
  if (!spec) {
    std::cerr << "ferry run: " << spec.error() << "\n";
    return kUsageFailure;
  }
  FollowOptions fo;
  fo.tty = o.tty;
  // A terminal's keystrokes are for --tty; piped input is forwarded, then EOF.
  fo.forward_stdin = o.tty || !platform::is_terminal(kStdin);
  fo.forward_interrupts = true;
  fo.forward_ports = true;
  run::RunClient client(*link->endpoint);
  // Asked while the sync and the start go on: no round trip added before the first byte.
  auto earlier = std::async(std::launch::async, [&client] { return client.list(false, /*running=*/true); });
  if (!o.no_sync && !flush_sync(*link)) return kFerryFailure;
  const unsigned drops = [&] {
    std::lock_guard lock(link->notes->mutex);
    return link->notes->drops;
  }();
  // Followed at once, the start attaches the stream too: no attach round trip before the output.
  auto started = client.start(*spec, o.detach ? std::nullopt : std::optional<bool>(wants_ports(*link, fo)));
  if (!started) {
    std::cerr << start_error("ferry run", *link, started.error()) << "\n";
    return started.error().code == protocol::error_code::kInvalidParams ? kUsageFailure : kFerryFailure;
  }
  if (auto runs = earlier.get()) note_runs_left_behind(*runs, spec->argv, started->id);
  if (o.detach) {
    std::cout << started->id << "\n";
    return exit_status::kOk;
  }
  if (started->attached) fo.attached_at_drops = drops;
  int rc = follow_run(*link, client, started->id, 0, fo, "ferry run");
  link->endpoint->close();
  return rc;
}

// ---- ferry runs ----

std::string format_duration(double seconds) {
  if (seconds < 0) return "-";
  auto s = static_cast<long long>(seconds);
  if (s < 60) return fmt::format("{:.1f}s", seconds);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s / 60) % 60);
}

std::string join_argv(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$") == std::string::npos;
    out += plain ? a : "'" + a + "'";
  }
  return out;
}

int run_runs(const GlobalOptions& g, bool all, bool as_json) {
  auto link = open_project_riding(g, "ferry runs");
  if (!link) return link.error();
  run::RunClient client(*link->endpoint);
  auto runs = client.list(all);
  if (!runs) {
    std::cerr << "ferry runs: " << runs.error().message << "\n";
    return kFerryFailure;
  }
  double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  // ferry.json's price makes each run's cost so far (or in all) a column.
  std::optional<double> usd_per_hour;
  if (link->config.price) {
    auto catalog = cloud::effective_catalog(link->config.gpu_catalog);
    auto rate = catalog ? cloud::host_rate(*link->config.price, *catalog) : std::unexpected(catalog.error());
    if (rate) usd_per_hour = cloud::billed_usd_per_hour(*rate, *link->config.price);
    else std::cerr << "ferry runs: no costs shown: ferry.json /price: " << rate.error() << "\n";
  }
  auto seconds_of = [&](const run::RunInfo& r) -> std::optional<double> {
    auto start = cloud::parse_iso_utc(r.started_at);
    auto end = r.ended_at.empty() ? std::optional<double>(protocol::run_state_from_string(r.state) == protocol::RunState::running ? now : -1) : cloud::parse_iso_utc(r.ended_at);
    if (!start || !end || *end < 0) return std::nullopt;
    return *end - *start;
  };
  if (as_json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : *runs) {
      nlohmann::json j{{"id", r.id}, {"state", r.state}, {"argv", r.argv}, {"cwd", r.cwd}, {"root", r.root},
                       {"pid", r.pid}, {"startedAt", r.started_at}, {"logBytes", r.log_bytes}};
      if (!r.ended_at.empty()) j["endedAt"] = r.ended_at;
      if (r.exit_code) j["exitCode"] = *r.exit_code;
      if (r.signal) j["signal"] = *r.signal;
      if (!r.group.empty()) j["group"] = r.group;
      if (!r.label.empty()) j["label"] = r.label;
      if (!r.slurm_job.empty()) j["slurmJob"] = r.slurm_job;
      if (r.slurm_state) j["slurmState"] = protocol::to_json(*r.slurm_state);
      if (r.followed) j["followed"] = *r.followed;
      if (auto secs = seconds_of(r); secs && usd_per_hour) {
        j["costUsd"] = static_cast<double>(cloud::cost_cents(*usd_per_hour, *secs / 3600)) / 100.0;
        j["usdPerHour"] = *usd_per_hour;
      }
      arr.push_back(j);
    }
    std::cout << arr.dump(2) << "\n";
    return exit_status::kOk;
  }
  const std::string cost_head = usd_per_hour ? fmt::format(" {:>9}", "COST") : "";
  std::cout << fmt::format("{:<21} {:<8} {:>9}{} {:>6}  {}\n", "ID", "STATE", "DURATION", cost_head, "EXIT", "COMMAND");
  // The runs of one group (the ranks of a `ferry train --hosts`) together, under one heading, where
  // the group's first run is listed.
  std::vector<const run::RunInfo*> order;
  std::set<std::string> grouped;
  for (const auto& r : *runs) {
    if (r.group.empty()) {
      order.push_back(&r);
    } else if (grouped.insert(r.group).second) {
      for (const auto& q : *runs)
        if (q.group == r.group) order.push_back(&q);
    }
  }
  std::string heading;
  for (const auto* rp : order) {
    const auto& r = *rp;
    if (!r.group.empty() && r.group != heading) {
      std::size_t n = 0;
      for (const auto* q : order) n += q->group == r.group;
      std::cout << fmt::format("group {} ({} runs on this host)\n", r.group, n);
    }
    heading = r.group;
    auto secs = seconds_of(r);
    std::string duration = secs ? format_duration(*secs) : "-";
    std::string cost;
    if (usd_per_hour) cost = fmt::format(" {:>9}", secs ? cloud::format_usd(cloud::cost_cents(*usd_per_hour, *secs / 3600)) : "-");
    std::string exit = r.exit_code ? std::to_string(*r.exit_code) : r.signal ? "SIG" + run::signal_name(*r.signal) : "-";
    std::string command = join_argv(r.argv);
    if (auto step = protocol::allocation_step_of(r.argv)) command = "[allocation " + step->job_id + "] " + join_argv(step->argv);
    if (!r.label.empty()) command = "[" + r.label + "] " + command;
    if (!r.slurm_job.empty())
      command = "[slurm job " + r.slurm_job + (r.slurm_state ? " " + protocol::describe_slurm_state(*r.slurm_state) : "") + "] " + command;
    if (r.followed == false) command = "[nobody following] " + command;
    std::cout << fmt::format("{}{:<21} {:<8} {:>9}{} {:>6}  {}\n", r.group.empty() ? "" : "  ", r.id, r.state, duration, cost, exit, command);
  }
  if (usd_per_hour) std::cerr << "cost at " << cloud::format_rate(*usd_per_hour) << " (ferry.json price); running runs: so far\n";
  if (runs->empty()) std::cerr << "no runs" << (all ? "" : " under this project (--all shows every project's)") << "\n";
  return exit_status::kOk;
}

// ---- ferry logs / attach / kill ----

int run_logs(const GlobalOptions& g, const std::string& id, bool stderr_only, bool follow) {
  // Following needs the agent's notifications: a link of its own.
  auto link = open_project_riding(g, "ferry logs");
  if (!link) return link.error();
  run::RunClient client(*link->endpoint);
  if (follow) {
    FollowOptions fo;
    fo.forward_interrupts = false;
    fo.stderr_only = stderr_only;
    return follow_run(*link, client, id, 0, fo, "ferry logs");
  }
  std::uint64_t offset = 0;
  for (;;) {
    auto r = client.read(id, offset);
    if (!r) {
      std::cerr << run_error("ferry logs", *link, r.error()) << "\n";
      return run::is_unknown_run(r.error()) ? kUsageFailure : kFerryFailure;
    }
    for (const auto& rec : r->records) {
      bool err = rec.stream == run::Stream::stderr_stream;
      if (stderr_only && !err) continue;
      if (!write_all(stderr_only || !err ? kStdout : kStderr, rec.data)) return exit_status::kReaderGone;
    }
    if (r->records.empty() || r->next == offset) break;  // all that is there now
    offset = r->next;
  }
  return exit_status::kOk;
}

int run_attach(const GlobalOptions& g, const std::string& id, bool tty) {
  auto link = open_project_riding(g, "ferry attach");
  if (!link) return link.error();
  run::RunClient client(*link->endpoint);
  FollowOptions fo;
  fo.tty = tty;
  fo.forward_stdin = tty;
  fo.forward_ports = true;
  int rc = follow_run(*link, client, id, 0, fo, "ferry attach");
  link->endpoint->close();
  return rc;
}

int run_kill(const GlobalOptions& g, const std::string& id, const std::string& signal) {
  auto number = run::signal_number(signal);
  if (!number) {
    std::cerr << "ferry kill: " << number.error() << "\n";
    return kUsageFailure;
  }
  auto link = open_project_riding(g, "ferry kill");
  if (!link) return link.error();
  run::RunClient client(*link->endpoint);
  std::string name = run::signal_name(*number);
  auto r = client.signal(id, name);
  if (!r) {
    std::cerr << run_error("ferry kill", *link, r.error()) << "\n";
    return run::is_unknown_run(r.error()) ? kUsageFailure : kFerryFailure;
  }
  std::cerr << "sent SIG" << name << " to run " << id << "\n";
  return exit_status::kOk;
}

}  // namespace

void add_run_commands(CLI::App& app, GlobalOptions& g) {
  auto o = std::make_shared<RunCliOptions>();
  auto* run = app.add_subcommand("run", "Sync, then run a command on the host in the mapped directory (ferry run -- train.py, "
                                        "or ferry run --launch NAME)");
  run->add_option("--launch", o->launch,
                  "Run ferry.json's launch entry NAME (kind run or debug; train entries: ferry train --launch); "
                  "arguments after -- are appended to its args, --cwd and --env win over its own");
  run->add_flag("--detach,-d", o->detach, "Print the run id and return at once; the run goes on");
  run->add_option("--env,-e", o->env, "KEY=VALUE for the run (after ferry.json's env; repeatable)");
  run->add_option("--cwd", o->cwd, "Working directory, relative to the mapping root");
  run->add_flag("--tty,-t", o->tty, "Give the run a pseudo-terminal (pdb, ipython); keys go to it as typed");
  run->add_flag("--no-sync", o->no_sync, "Run what is on the host now; skip the sync");
  run->add_option("command", o->command, "The command (a .py file gets the configured interpreter); with --launch, "
                                         "extra arguments");
  run->prefix_command(false);
  run->callback([&g, o] { g.exit_code = run_run(g, *o); });

  auto all = std::make_shared<bool>(false), as_json = std::make_shared<bool>(false);
  auto* runs = app.add_subcommand("runs", "List runs on the host: id, state, duration, cost (with ferry.json's price), exit status, command");
  runs->add_flag("--all,-a", *all, "Every project's runs on the host, not just this one's");
  runs->add_flag("--json", *as_json, "Print the list as JSON");
  runs->callback([&g, all, as_json] { g.exit_code = run_runs(g, *all, *as_json); });

  struct IdOptions {
    std::string id;
    std::string signal = "TERM";
    bool stderr_only = false, follow = false, tty = false;
  };
  auto lo = std::make_shared<IdOptions>();
  auto* logs = app.add_subcommand("logs", "Print a run's output so far (stdout to stdout, stderr to stderr)");
  logs->add_option("id", lo->id, "Run id (see ferry runs)")->required();
  logs->add_flag("--stderr-only", lo->stderr_only, "Only the run's stderr, printed to stdout");
  logs->add_flag("--follow,-f", lo->follow, "Keep printing until the run ends");
  logs->callback([&g, lo] { g.exit_code = run_logs(g, lo->id, lo->stderr_only, lo->follow); });

  auto ao = std::make_shared<IdOptions>();
  auto* attach = app.add_subcommand("attach", "Stream a run from its start, then live; exits with its status");
  attach->add_option("id", ao->id, "Run id (see ferry runs)")->required();
  attach->add_flag("--tty,-t", ao->tty, "Raw terminal and keys forwarded (for runs started with --tty)");
  attach->callback([&g, ao] { g.exit_code = run_attach(g, ao->id, ao->tty); });

  auto ko = std::make_shared<IdOptions>();
  auto* kill = app.add_subcommand("kill", "Signal a run's process group (default TERM)");
  kill->add_option("id", ko->id, "Run id (see ferry runs)")->required();
  kill->add_option("--signal,-s", ko->signal, "INT, TERM, KILL, HUP, QUIT, USR1, USR2 or a number")->capture_default_str();
  kill->callback([&g, ko] { g.exit_code = run_kill(g, ko->id, ko->signal); });
}

}  // namespace ferry::cli
