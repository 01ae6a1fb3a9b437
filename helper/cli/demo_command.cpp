// `ferry demo`: the local host end to end, no SSH and no GPU: load samples/ferry.json, start the
// local agent, show its handshake and a few round trips, close it. Output is for a person.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "ferry/source_tree.hpp"
#include "ferry/version.hpp"
#include "helper/cli/commands.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/cloud/cost_estimate.hpp"
#include "helper/deploy/project_config.hpp"
#include "helper/deploy/project_trust.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "helper/run/run_follower.hpp"
#include "helper/sync/sync_engine.hpp"
#include "helper/run/run_exit.hpp"
#include "helper/train/train_launch.hpp"
#include "helper/train/train_progress.hpp"
#include "helper/train/train_session.hpp"
#include "helper/sync/mapping_target.hpp"

namespace ferry::cli {
namespace {

namespace fs = std::filesystem;

struct DemoOptions {
  std::string sandbox;  // default: ~/.cache/ferry/local/<project name>
  int pings = 200;
};

// --project, else samples/ of the source tree this ferry was built from, else the project
// around the cwd (walking up to ferry.json).
fs::path demo_project_dir(const GlobalOptions& g) {
  if (g.project_dir) return *g.project_dir;
  std::error_code ec;
  fs::path samples = fs::path(kSourceDir) / "samples";
  if (fs::is_regular_file(samples / deploy::kProjectFileName, ec)) return samples;
  fs::path cwd = fs::current_path(ec);
  if (auto found = deploy::find_project_file(cwd)) return found->parent_path();
  return cwd;
}

void row(std::string_view key, std::string_view value) { std::cout << fmt::format("  {:<13}{}\n", key, value); }

// Syncs the first mapping into the sandbox twice: a full first push, then a no-op one. The
// mapped directory and its manifest are cleared first so the first push is a real one.
void run_demo_sync(const deploy::ProjectConfig& config, remote::Endpoint& endpoint, const fs::path& sandbox) {
  const deploy::Mapping& m = config.mappings.front();
  if (config.host != "local" || !m.remote.starts_with("~")) return;
  sync::SyncTarget target = sync::mapping_target(config, m);
  std::error_code ec;
  sync::SyncEngine engine(endpoint, target);
  if (!target.remote_base.empty()) fs::remove_all(sandbox / target.remote_base, ec);
  fs::remove(engine.manifest_path(), ec);
  std::cout << "Sync     " << target.local_root.string() << "  ->  " << (sandbox / target.remote_base).string() << "\n";
  for (const char* label : {"first", "second"}) {
    auto s = engine.push({});
    if (!s) {
      std::cout << "  " << label << ": failed: " << s.error().message << "\n";
      return;
    }
    std::cout << fmt::format("  {:<12}{}\n", std::string(label) + " sync", s->one_line());
  }
  std::cout << "\n";
}

// Trains samples/train/quick.json on the local host through the agent, as `ferry train` does
// (a run, its events, the outputs pulled back), and shows where the plot landed.
void run_demo_train(const deploy::ProjectConfig& config, remote::Endpoint& endpoint) {
  const deploy::Mapping& m = config.mappings.front();
  const fs::path sample = config.root / "train" / "quick.json";
  if (config.host != "local" || !m.remote.starts_with("~") || !fs::is_regular_file(sample)) return;
  if (auto found = training::find_local_train_binary(); !found) {
    std::cout << "Train    skipped: ferry-train was not built (cmake -DFERRY_WITH_TORCH=ON)\n\n";
    return;
  }
  sync::SyncTarget target = sync::mapping_target(config, m);
  sync::SyncEngine engine(endpoint, target);
  training::TrainProgress progress;
  std::mutex mu;
  training::TrainSinks sinks;
  sinks.on_event = [&](const training::TrainEvent& e, std::string_view) {
    std::lock_guard lock(mu);
    for (const auto& line : progress.on_event(e)) std::cout << "  " << line << "\n";
    if (e.kind == "step" && progress.step() == progress.total_steps()) std::cout << "  " << progress.bar(90) << "\n";
  };
  training::TrainSession session(endpoint, engine, sinks);
  training::TrainRequest request;
  request.config = sample;
  request.local_host = true;
  request.env = config.env;
  std::cout << "Train    ferry train " << sample.string() << " (ferry-train on CPU, as a run)\n";
  const auto t0 = std::chrono::steady_clock::now();
  auto id = session.start(request);
  if (!id) {
    std::cout << "  failed: " << id.error().message << "\n\n";
    return;
  }
  auto exit = session.follow();
  if (!exit) {
    std::cout << "  failed: " << exit.error().message << "\n\n";
    return;
  }
  const auto pulled = session.pull_outputs();
  row("run", fmt::format("{}: {} in {:.1f} s", *id, run::describe(*exit),
                         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
  for (const auto& f : pulled.files)
    if (f.filename() == "plot.svg") row("plot", f.string());
  for (const auto& n : pulled.notes) row("note", n);
  std::cout << "\n";
}

// Runs samples/hello_gpu.py through the agent as `ferry run` would: its stdout and stderr stream
// back apart, then the exit status.
void run_demo_run(const deploy::ProjectConfig& config, remote::Endpoint& endpoint, const fs::path& sandbox) {
  const deploy::Mapping& m = config.mappings.front();
  if (config.host != "local" || !m.remote.starts_with("~")) return;
  if (!fs::exists(config.root / m.local / "hello_gpu.py")) return;
  run::LaunchRequest req;
  req.command = {"hello_gpu.py"};
  req.interpreter = config.interpreter;
  req.config_env = config.env;
  req.remote_base = m.remote.substr(m.remote.size() > 1 ? 2 : 1);
  req.mapping_root = (sandbox / req.remote_base).string();
  auto spec = run::make_run_spec(req);
  if (!spec) return;
  std::string shown;
  for (const auto& a : spec->argv) shown += (shown.empty() ? "" : " ") + a;
  std::cout << "Run      " << shown << "   (ferry run -- hello_gpu.py)\n" << std::flush;
  run::RunClient client(endpoint);
  auto started = client.start(*spec);
  if (!started) {
    std::cout << "  failed to start: " << started.error().message << "\n\n";
    return;
  }
  // Records are not lines: the prefix goes at each line start of each stream.
  bool line_start[2] = {true, true};
  run::RunFollower follower(client, started->id, 0, [&line_start](const run::OutputRecord& r) {
    bool err = r.stream == run::Stream::stderr_stream;
    std::ostream& os = err ? std::cerr : std::cout;
    for (char c : r.data) {
      if (line_start[err]) os << (err ? "  stderr | " : "  stdout | ");
      os << c;
      line_start[err] = c == '\n';
    }
    os << std::flush;
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    if (follower.needs_attach() && !follower.attach()) break;
    auto ev = follower.wait(deadline);
    if (ev == run::RunFollower::Event::needs_attach) continue;
    break;
  }
  if (auto exit = follower.exit(); exit && follower.finished())
    row("run id", fmt::format("{}: {} (ferry's exit status would be {})", started->id, run::describe(*exit),
                              run::exit_status(*exit)));
  else
    row("run id", started->id + ": did not finish within 60 s (see ferry runs)");
  std::cout << "\n";
}

// What the demo's work (sync, run, training) would cost at the same wall time on a few catalog
// instances: the numbers `ferry cost` gives, applied to a job whose length was just measured.
void print_demo_cost(double seconds) {
  std::cout << fmt::format("Cost     this demo's sync + run + training took {:.1f} s here; the same wall time on\n", seconds);
  const auto& catalog = cloud::builtin_catalog();
  for (const char* instance : {"g4dn.xlarge", "g6.xlarge", "p3.2xlarge", "a2-highgpu-1g", "gpu-h100-sxm-1gpu"}) {
    auto found = cloud::find_by_instance(catalog, instance);
    if (found.empty()) continue;
    const auto& o = *found.front();
    std::string spot = o.spot_usd_per_hour ? fmt::format(", spot ${:.5f}", *o.spot_usd_per_hour * seconds / 3600) : "";
    row(o.gpu, fmt::format("{} {} at {}: ${:.5f}{} (an hour: {})", o.provider, o.instance,
                           cloud::format_rate(o.on_demand_usd_per_hour), o.on_demand_usd_per_hour * seconds / 3600, spot,
                           cloud::format_usd(cloud::cost_cents(o.on_demand_usd_per_hour, 1))));
  }
  std::cout << "  (catalog list prices with their dates: ferry cost catalog; price any job: ferry cost --gpu T4 --hours 20)\n\n";
}

int run_demo(const GlobalOptions& g, const DemoOptions& o) {
  std::cout << "ferry " << kVersion << " demo: the `local` host (a sandbox on this machine; no SSH, no GPU)\n\n";

  fs::path dir = demo_project_dir(g);
  auto config = deploy::load_project(dir);
  if (!config) {
    std::cerr << "ferry demo: " << config.error().to_string() << "\n";
    return exit_status::kFailed;
  }
  // The sample project ships with ferry and is trusted as ferry is; any other is asked about.
  std::error_code ec;
  const bool own_sample = fs::equivalent(config->root, fs::path(kSourceDir) / "samples", ec);
  if (auto admitted = own_sample ? deploy::TrustStore().trust(*config) : admit_cli_project(g, *config); !admitted) {
    std::cerr << "ferry demo: " << admitted.error() << "\n";
    return exit_status::kUsage;
  }
  std::cout << "Project  " << (config->root / deploy::kProjectFileName).string() << "\n";
  row("name", config->name);
  row("host", config->host);
  for (const auto& m : config->mappings) row("mapping", m.local + "  ->  " + m.remote);
  if (!config->exclude.empty()) {
    std::string ex;
    for (const auto& e : config->exclude) ex += (ex.empty() ? "" : "  ") + e;
    row("exclude", ex);
  }
  row("interpreter", config->interpreter);
  for (const auto& t : config->tunnels)
    row("tunnel", fmt::format("{} ({}): 127.0.0.1:{} -> {}:{}", t.name, t.kind, t.local_port, t.remote_host, t.remote_port));
  std::cout << "\n";

  remote::LocalEndpointOptions opts;
  opts.project_name = config->name;
  if (!o.sandbox.empty()) opts.root = o.sandbox;
  if (g.log_level != "warn") opts.agent_args = {"--log-level", g.log_level};
  remote::LocalEndpoint endpoint(opts);
  auto t0 = std::chrono::steady_clock::now();
  auto info = endpoint.connect();
  if (!info) {
    std::cerr << "ferry demo: cannot start the local agent: " << info.error().message << "\n";
    return exit_status::kFailed;
  }
  auto handshake_us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  std::cout << "Agent    " << endpoint.description() << "\n";
  row("magic line", fmt::format("FERRY-AGENT {} {}", info->protocol_version, info->version));
  row("this ferry", fmt::format("{} (agent protocol {})", kVersion, kAgentProtocolVersion));
  row("pid", std::to_string(info->pid));
  row("root", info->root);
  row("system", fmt::format("{} {} on {}", info->os, info->arch, info->hostname));
  // On the local host "~" in a mapping is the sandbox, so a person can find the synced files.
  for (const auto& m : config->mappings)
    if (config->host == "local" && m.remote.starts_with("~"))
      row("mapped to", (fs::path(info->root) / m.remote.substr(m.remote.size() > 1 ? 2 : 1)).string());
  row("handshake", fmt::format("{:.1f} ms (spawn, magic line, agent/hello)", handshake_us.count() / 1000.0));

  std::vector<double> rtts;
  for (int i = 0; i < o.pings; ++i) {
    auto t = std::chrono::steady_clock::now();
    auto pong = endpoint.call("agent/ping", {{"echo", i}});
    if (!pong || pong->value("echo", -1) != i) {
      std::cerr << "ferry demo: agent/ping failed: " << (pong ? "wrong echo" : pong.error().message) << "\n";
      return exit_status::kFailed;
    }
    rtts.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t).count());
  }
  if (!rtts.empty()) {
    std::sort(rtts.begin(), rtts.end());
    row("round trip", fmt::format("{:.0f} us median, {:.0f} us p99 over {} pings (CBOR frames on pipes)",
                                  rtts[rtts.size() / 2], rtts[rtts.size() * 99 / 100], rtts.size()));
  }
  auto st = endpoint.call("fs/stat", {{"path", "."}});
  if (st) row("fs/stat .", fmt::format("{} mode {:o}", st->value("type", "?"), st->value("mode", 0u)));
  auto escape = endpoint.call("fs/stat", {{"path", "../outside"}});
  if (!escape) row("fs/stat ..", "refused: " + escape.error().message);
  std::cout << "\n";
  const auto work_start = std::chrono::steady_clock::now();
  run_demo_sync(*config, endpoint, fs::path(info->root));
  run_demo_run(*config, endpoint, fs::path(info->root));
  run_demo_train(*config, endpoint);
  print_demo_cost(std::chrono::duration<double>(std::chrono::steady_clock::now() - work_start).count());

  endpoint.close();
  std::cout << "Closed   ";
  if (auto status = endpoint.exit_status())
    std::cout << "agent " << remote::ChildProcess::describe_status(*status) << "\n";
  else
    std::cout << "agent stopped\n";
  std::cout << "\nNext: `ferry init --host user@gpu-box` in your project, then `ferry serve` from your IDE.\n";
  return exit_status::kOk;
}

}  // namespace

void add_demo_command(CLI::App& app, GlobalOptions& g) {
  auto opts = std::make_shared<DemoOptions>();
  auto* cmd = app.add_subcommand("demo", "Tour on the built-in local host: agent handshake, sync of samples/, a streamed run, a short CPU training");
  cmd->add_option("--sandbox", opts->sandbox, "Agent root (default: $XDG_CACHE_HOME/ferry/local/NAME)");
  cmd->add_option("--pings", opts->pings, "Round trips to time")->check(CLI::Range(0, 100000))->capture_default_str();
  cmd->callback([&g, opts] { g.exit_code = run_demo(g, *opts); });
}

}  // namespace ferry::cli
