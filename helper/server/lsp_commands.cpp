// workspace/executeCommand: ferry.run, ferry.debug, ferry.train, ferry.sync, ferry.pull,
// ferry.stop, ferry.tunnel, ferry.doctor, ferry.gpu, ferry.trustProject — what the code lenses run, and what any
// client's command palette can. A client with ferry's experimental capability gets ferry's own
// notifications (run/output, train/metrics); any other gets the output in a log file under
// .ferry/logs/ opened with window/showDocument (a message naming it where the client cannot),
// and the outcome as window/showMessage.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/path_within.hpp"
#include "helper/deploy/launch_target.hpp"
#include "helper/remote/forward_spec.hpp"
#include "helper/server/lsp_params.hpp"
#include "helper/server/run_log.hpp"
#include "helper/server/server_state.hpp"
#include "helper/sync/mapping_target.hpp"
#include "protocol/file_uri.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
namespace fs = std::filesystem;
using p::json;
using p::ResponseError;

namespace {

ResponseError usage(const std::string& command, const std::string& what) { return command_usage(command, what); }

// The project a command is about: the file's, else the workspace's.
std::expected<deploy::ProjectConfig, ResponseError> command_project(const ServerState& s, const CommandTarget& t) {
  return t.file ? project_of_file(*t.file) : lookup_project(std::nullopt, s.workspace);
}

// The file relative to the first mapping's local folder (what the box sees, below its root).
std::expected<std::string, ResponseError> mapped_path(const std::string& command, const deploy::ProjectConfig& config,
                                                      const fs::path& file) {
  const fs::path root = sync::mapping_target(config, config.mappings.front()).local_root;
  std::error_code ec;
  const std::string rel = ferry::posix::relative_to(fs::weakly_canonical(file, ec), root).generic_string();
  if (rel.empty() || rel == "." || rel.starts_with(".."))
    return std::unexpected(usage(command, file.string() + " is not inside the mapping " + root.string()));
  return rel;
}

// The file relative to the project root (a project of several mappings).
std::expected<std::string, ResponseError> project_relative(const std::string& command, const deploy::ProjectConfig& config,
                                                           const fs::path& file) {
  std::error_code ec;
  const std::string rel = ferry::posix::relative_to(fs::weakly_canonical(file, ec), fs::weakly_canonical(config.root, ec)).generic_string();
  if (rel.empty() || rel.starts_with(".."))
    return std::unexpected(usage(command, file.string() + " is not inside the project " + config.root.string()));
  return rel;
}

// A typed result (or its error) as the command's JSON.
template <class T>
std::expected<json, ResponseError> as_json(std::expected<T, ResponseError> r) {
  if (!r) return std::unexpected(std::move(r.error()));
  return p::to_json(*r);
}

json with(json result, const char* key, json value) {
  if (!result.is_object()) result = json{{"result", std::move(result)}};
  result[key] = std::move(value);
  return result;
}

// A number in a JSON object from elsewhere (ferry-train's events, the agent's GPU list), if it is one.
std::optional<double> number_at(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return std::nullopt;
  return j[key].get<double>();
}

std::string exit_words(const json& exited) {
  if (exited.contains("error")) return "failed: " + exited["error"].get<std::string>();
  if (exited.contains("signal")) return "was killed by signal " + std::to_string(exited["signal"].get<int>());
  if (exited.contains("exitCode")) return "exited with status " + std::to_string(exited["exitCode"].get<int>());
  return "ended";
}

MessageType exit_type(const json& exited) {
  return exited.value("exitCode", -1) == 0 && !exited.contains("signal") && !exited.contains("error") ? MessageType::info
                                                                                                        : MessageType::error;
}

// ---- the commands ----

using Handler = std::function<std::expected<json, ResponseError>(ServerState&, const std::string&, const json&, p::CallContext&)>;

// What ferry.run / ferry.debug start: the file relative to the mapping with its args, or a
// ferry.json launch entry ({launch: NAME}) as `ferry run --launch NAME` starts it. `label` names it
// in messages and log files.
struct Launch {
  std::vector<std::string> argv;
  std::string cwd;
  std::map<std::string, std::string> env;
  std::string label;
};

std::expected<Launch, ResponseError> command_launch(const std::string& cmd, std::string_view kind,
                                                   const deploy::ProjectConfig& config, const CommandTarget& t) {
  Launch l;
  if (t.options.contains("launch")) {
    if (!t.options["launch"].is_string()) return std::unexpected(usage(cmd, "launch: expected an entry's name"));
    auto entry = deploy::find_launch(config, t.options["launch"].get<std::string>());
    if (!entry) return std::unexpected(usage(cmd, entry.error()));
    if (auto fits = deploy::check_launch_kind(**entry, kind); !fits) return std::unexpected(usage(cmd, fits.error()));
    auto command = deploy::launch_command(config, **entry, t.args);
    if (!command) return std::unexpected(usage(cmd, command.error()));
    return Launch{command->command, command->cwd, command->env, (*entry)->name};
  }
  if (!t.file) return std::unexpected(usage(cmd, "needs the Python file (the code lens passes its URI) or {launch: NAME}"));
  auto rel = mapped_path(cmd, config, *t.file);
  if (!rel) return std::unexpected(rel.error());
  l.argv.push_back(*rel);
  l.argv.insert(l.argv.end(), t.args.begin(), t.args.end());
  l.label = *rel;
  return l;
}

std::expected<json, ResponseError> run_command(ServerState& s, const std::string& cmd, const json& arguments,
                                               p::CallContext& call) {
  auto t = command_target(cmd, arguments);
  if (!t) return std::unexpected(t.error());
  if (!t->file && !t->options.contains("launch"))
    return std::unexpected(usage(cmd, "needs the Python file to run (the code lens passes its URI)"));
  auto config = command_project(s, *t);
  if (!config) return std::unexpected(config.error());
  auto launch = command_launch(cmd, "run", *config, *t);
  if (!launch) return std::unexpected(launch.error());
  // tty (VS Code's "with a Terminal"): checked before anything is synced or started.
  bool tty = false;
  if (auto it = t->options.find("tty"); it != t->options.end()) {
    if (!it->is_boolean()) return std::unexpected(usage(cmd, "tty: expected true or false"));
    tty = it->get<bool>();
    // A plain LSP client shows output as a log file: nothing there could be a terminal.
    if (tty && !s.questions.traits().ferry)
      return std::unexpected(usage(cmd, "tty: a run with a terminal needs a terminal to show it in (ferry's VS Code "
                                        "extension, or `ferry run --tty` in a terminal)"));
  }
  auto work = s.progress.begin(&call);
  work->progress().begin("Running " + launch->label + " on " + config->host, "syncing");
  auto synced = s.sync->flush(config->root.string(), call, work.get());
  if (!synced) return std::unexpected(synced.error());
  if (work->cancelled()) return std::unexpected(p::cancelled_error(cmd));
  RunStartParams params;
  params.path = config->root.string();
  params.argv = launch->argv;
  params.cwd = launch->cwd;
  params.env = launch->env;
  if (tty) {
    params.tty = true;
    params.cols = 80;  // until the editor's terminal opens and says its size (run/resize)
    params.rows = 24;
  }
  if (s.questions.traits().ferry) return as_json(s.runs->start(params));
  const std::string* rel = &launch->label;

  auto log = RunLog::create(config->root, fs::path(*rel).stem().string());
  if (!log) return std::unexpected(ResponseError{p::error_code::kIoError, cmd + ": " + log.error(), {}});
  RunSink sink;
  sink.output = [log = *log](const run::OutputRecord& r) { log->write(r.data); };
  sink.exited = [&s, log = *log, what = *rel + " on " + config->host](const json& exited) {
    s.questions.show(exit_type(exited), "ferry: " + what + " " + exit_words(exited) + " (output: " + log->path().string() + ")");
  };
  auto started = s.runs->start(params, sink);
  if (!started) return std::unexpected(started.error());
  work->progress().end("started " + started->id);
  show_file(s, (*log)->path(), "the run's output is in");
  return with(p::to_json(*started), "log", (*log)->path().string());
}

std::expected<json, ResponseError> debug_command(ServerState& s, const std::string& cmd, const json& arguments,
                                                 p::CallContext& call) {
  auto t = command_target(cmd, arguments);
  if (!t) return std::unexpected(t.error());
  if (!t->file && !t->options.contains("launch"))
    return std::unexpected(usage(cmd, "needs the Python file to debug (the code lens passes its URI)"));
  auto config = command_project(s, *t);
  if (!config) return std::unexpected(config.error());
  auto launch = command_launch(cmd, "debug", *config, *t);
  if (!launch) return std::unexpected(launch.error());
  const std::string* rel = &launch->label;
  auto work = s.progress.begin(&call);
  work->progress().begin("Starting the debugger for " + *rel, "syncing");
  auto synced = s.sync->flush(config->root.string(), call, work.get());
  if (!synced) return std::unexpected(synced.error());
  if (work->cancelled()) return std::unexpected(p::cancelled_error(cmd));
  DebugPrepareParams params;
  params.path = config->root.string();
  params.command = launch->argv;
  params.cwd = launch->cwd;
  params.env = launch->env;
  params.local_port = t->options.value("localPort", 0);  // any free port here unless asked
  params.port = t->options.value("port", params.port);    // debugpy's port on the box (default 5678)
  work->progress().report("starting debugpy on " + config->host);
  auto prepared = prepare_debug(*s.debugs, params, call.cancellation());
  if (!prepared) return std::unexpected(prepared.error());
  json result = p::to_json(*prepared);
  if (s.questions.traits().ferry) {
    (void)s.runs->attach(prepared->run_id, 0);
    return result;
  }
  auto log = RunLog::create(config->root, fs::path(*rel).stem().string() + "-debug");
  if (log) {
    RunSink sink;
    sink.output = [log = *log](const run::OutputRecord& r) { log->write(r.data); };
    sink.exited = [&s, log = *log, what = *rel](const json& exited) {
      s.questions.show(exit_type(exited), "ferry: " + what + " (debug) " + exit_words(exited));
    };
    (void)s.runs->attach(prepared->run_id, 0, sink);
    result["log"] = (*log)->path().string();
  }
  s.questions.show(MessageType::info, fmt::format("ferry: {} waits for a debugger on 127.0.0.1:{} (debugpy, DAP). Attach "
                                                  "your editor's Python debugger there; path mappings: {}",
                                                  *rel, prepared->local_port,
                                                  prepared->configuration.value("pathMappings", json::array()).dump()));
  return result;
}

std::expected<json, ResponseError> train_command(ServerState& s, const std::string& cmd, const json& arguments,
                                                 p::CallContext& call) {
  auto t = command_target(cmd, arguments);
  if (!t) return std::unexpected(t.error());
  if (!t->file) return std::unexpected(usage(cmd, "needs the training config (the code lens passes its URI)"));
  auto config = command_project(s, *t);
  if (!config) return std::unexpected(config.error());
  if (t->options.contains("launch")) {
    // A launch entry of kind train names its config; the lens's file is ferry.json then.
    auto entry = t->options["launch"].is_string() ? deploy::find_launch(*config, t->options["launch"].get<std::string>())
                                                  : std::unexpected(std::string("launch: expected an entry's name"));
    auto fits = entry ? deploy::check_launch_kind(**entry, "train") : std::unexpected(entry.error());
    auto path = fits ? deploy::train_config_path(*config, **entry) : std::unexpected(fits.error());
    if (!path) return std::unexpected(usage(cmd, path.error()));
    t->file = *path;
  }
  TrainStartParams params;
  params.path = config->root.string();
  params.config = t->file->string();
  params.resume = t->options.value("resume", false);
  if (s.questions.traits().ferry) return as_json(start_training(*s.trains, params, call));

  auto log = RunLog::create(config->root, t->file->stem().string() + "-train");
  if (!log) return std::unexpected(ResponseError{p::error_code::kIoError, cmd + ": " + log.error(), {}});
  std::shared_ptr<ServerProgress::Work> work = s.progress.begin(nullptr);
  work->progress().begin("Training " + t->file->filename().string() + " on " + config->host);
  TrainObserver observer;
  auto total_steps = std::make_shared<std::atomic<long long>>(0);
  observer.event = [log = *log, work, total_steps](const training::TrainEvent& e, std::string_view line) {
    log->write(std::string(line) + "\n");
    if (e.kind == "start" || e.kind == "step") {
      if (auto total = number_at(e.body, "total_steps")) *total_steps = static_cast<long long>(*total);
      const long long total = *total_steps;
      const long long step = static_cast<long long>(number_at(e.body, "step").value_or(0));
      std::string message = fmt::format("step {}", step);
      if (auto loss = number_at(e.body, "loss")) message += fmt::format(", loss {:.4g}", *loss);
      work->progress().report(message, total > 0 ? std::optional<int>(static_cast<int>(step * 100 / total)) : std::nullopt);
    }
  };
  observer.other = [log = *log](std::string_view text) { log->write(text.ends_with('\n') ? std::string(text) : std::string(text) + "\n"); };
  observer.exited = [&s, log = *log, work, name = t->file->filename().string()](const json& exited) {
    work->progress().end(exit_words(exited));
    std::string outputs;
    if (exited.contains("outputs"))
      for (const auto& f : exited["outputs"]) outputs += (outputs.empty() ? "; pulled " : ", ") + f.get<std::string>();
    s.questions.show(exit_type(exited), "ferry: training " + name + " " + exit_words(exited) + outputs +
                                            " (log: " + log->path().string() + ")");
  };
  auto started = start_training(*s.trains, params, call, observer);
  if (!started) return std::unexpected(started.error());
  show_file(s, (*log)->path(), "the training's log is in");
  return with(p::to_json(*started), "log", (*log)->path().string());
}

std::expected<json, ResponseError> sync_command(ServerState& s, const std::string& cmd, const json& arguments,
                                                p::CallContext& call) {
  auto t = command_target(cmd, arguments);
  if (!t) return std::unexpected(t.error());
  auto config = command_project(s, *t);
  if (!config) return std::unexpected(config.error());
  auto work = s.progress.begin(&call);
  work->progress().begin("Syncing to " + config->host);
  auto summary = s.sync->flush(config->root.string(), call, work.get());
  if (!summary) return std::unexpected(summary.error());
  if (!s.questions.traits().ferry) {
    const auto conflicts = summary->conflicts.size();
    s.questions.show(conflicts ? MessageType::warning : MessageType::info,
                     fmt::format("ferry: synced to {}: {} sent, {} deleted, {} conflicts", config->host,
                                 summary->files_sent, summary->files_deleted, conflicts));
  }
  return p::to_json(*summary);
}

std::expected<json, ResponseError> pull_command(ServerState& s, const std::string& cmd, const json& arguments,
                                                p::CallContext& call) {
  std::vector<std::string> paths;
  std::optional<std::string> project;
  for (const auto& a : arguments) {
    if (!a.is_string()) return std::unexpected(usage(cmd, "expected paths (relative to the mapping) or file URIs"));
    std::string path = a.get<std::string>();
    if (path.starts_with("file:")) {
      auto local = p::file_uri_to_fs_path(path);
      if (!local) return std::unexpected(usage(cmd, local.error()));
      auto config = project_of_file(*local);
      if (!config) return std::unexpected(config.error());
      // With several mappings sync/pull reads paths from the project root (sync/pull routes them).
      auto rel = config->mappings.size() > 1 ? project_relative(cmd, *config, *local) : mapped_path(cmd, *config, *local);
      if (!rel) return std::unexpected(rel.error());
      project = config->root.string();
      path = *rel;
    }
    paths.push_back(path);
  }
  if (paths.empty()) return std::unexpected(usage(cmd, "name what to pull (paths relative to the mapping, e.g. \"outputs/\")"));
  p::SyncPullParams pull;
  pull.path = project;
  pull.paths = paths;
  auto summary = s.sync->pull(pull, call);
  if (summary && !s.questions.traits().ferry)
    s.questions.show(MessageType::info, fmt::format("ferry: pulled {} files", summary->files_sent));
  return as_json(std::move(summary));
}

std::expected<json, ResponseError> stop_command(ServerState& s, const std::string& cmd, const json& arguments,
                                                p::CallContext&) {
  std::string id;
  if (!arguments.empty() && arguments[0].is_string()) id = arguments[0].get<std::string>();
  if (id.empty()) {
    auto running = s.runs->running();
    if (running.empty()) {
      // Not a run this server follows: maybe a training.
      return std::unexpected(usage(cmd, "no run of this editor is running (name a run id to stop another)"));
    }
    id = running.back();
  }
  auto stopped = s.runs->signal(id, "INT");
  if (!stopped) {
    auto training = stop_training(*s.trains, id);
    if (!training) return std::unexpected(stopped.error());
  }
  if (!s.questions.traits().ferry) s.questions.show(MessageType::info, "ferry: sent Ctrl-C (SIGINT) to run " + id);
  return json{{"stopped", id}};
}

std::expected<json, ResponseError> tunnel_command(ServerState& s, const std::string& cmd, const json& arguments,
                                                  p::CallContext& call) {
  if (arguments.empty()) return std::unexpected(usage(cmd, "name the tunnel: \"8888\", \"9000:localhost:6006\" or {localPort, remotePort}"));
  std::expected<remote::ForwardSpec, std::string> spec =
      arguments[0].is_string() ? remote::parse_forward_spec(arguments[0].get<std::string>(), remote::ForwardKind::kLocal)
      : arguments[0].is_object() ? remote::forward_spec_from_json(arguments[0])
                                 : std::unexpected(std::string("expected a string or an object"));
  if (!spec) return std::unexpected(usage(cmd, spec.error()));
  auto link = s.ctx.link(std::nullopt, call.cancellation());
  if (!link) return std::unexpected(link.error());
  auto info = (*link)->endpoint().open_forward(*spec);
  if (!info) return std::unexpected(info.error());
  if (!s.questions.traits().ferry) s.questions.show(MessageType::info, "ferry: tunnel " + remote::describe(*info));
  return remote::to_json(*info);
}

std::expected<json, ResponseError> doctor_command(ServerState& s, const std::string& cmd, const json& arguments,
                                                  p::CallContext& call) {
  auto t = command_target(cmd, arguments);
  if (!t) return std::unexpected(t.error());
  auto config = command_project(s, *t);
  if (!config) return std::unexpected(config.error());
  p::DoctorRunParams params;
  params.path = config->root.string();
  auto r = run_doctor_checks(s.ctx, params, call);
  if (!r) return std::unexpected(r.error());
  if (!s.questions.traits().ferry) {
    int fails = 0, warns = 0;
    std::string report = "ferry doctor: " + r->host + "\n";
    for (const auto& c : r->checks) {
      fails += c.status == "fail";
      warns += c.status == "warn";
      report += fmt::format("{:5} {}: {}{}\n", c.status, c.check, c.detail, c.fix.empty() ? "" : " (fix: " + c.fix + ")");
    }
    if (auto log = RunLog::create(config->root, "doctor")) {
      (*log)->write(report);
      show_file(s, (*log)->path(), "the doctor's report is in");
    }
    s.questions.show(fails ? MessageType::error : warns ? MessageType::warning : MessageType::info,
                     fmt::format("ferry doctor: {} checks, {} failed, {} warnings", r->checks.size(), fails, warns));
  }
  return p::to_json(*r);
}

std::expected<json, ResponseError> gpu_command(ServerState& s, const std::string&, const json&, p::CallContext& call) {
  auto link = s.ctx.link(std::nullopt, call.cancellation());
  if (!link) return std::unexpected(link.error());
  auto status = (*link)->endpoint().call("gpu/status", json::object());
  if (!status) return std::unexpected(status.error());
  if (!s.questions.traits().ferry) {
    std::string text = "ferry: " + (*link)->host() + ": ";
    if (!status->is_object() || status->value("available", json(false)) != json(true)) {
      const json reason = status->is_object() ? status->value("reason", json()) : json();
      text += "no GPU (" + (reason.is_string() ? reason.get<std::string>() : std::string("NVML not available")) + ")";
    } else {
      for (const auto& g : status->value("gpus", json::array()))
        text += fmt::format("[{}] {} {}% util, {:.1f}/{:.1f} GiB; ", number_at(g, "index").value_or(0),
                            g.contains("name") && g["name"].is_string() ? g["name"].get<std::string>() : "?",
                            number_at(g, "util_percent").value_or(0), number_at(g, "mem_used_bytes").value_or(0) / (1 << 30),
                            number_at(g, "mem_total_bytes").value_or(0) / (1 << 30));
    }
    s.questions.show(MessageType::info, text);
  }
  return status;
}

// Asks the trust question again, even for a project the person said "Not now" to (the command is
// how they change their mind from the editor).
std::expected<json, ResponseError> trust_command(ServerState& s, const std::string& cmd, const json& arguments,
                                                 p::CallContext& call) {
  auto t = command_target(cmd, arguments);
  if (!t) return std::unexpected(t.error());
  auto config = command_project(s, *t);
  if (!config) return std::unexpected(config.error());
  if (auto admitted = s.sessions.trust().admit(*config, call.cancellation(), true); !admitted)
    return std::unexpected(admitted.error());
  if (!s.questions.traits().ferry) s.questions.show(MessageType::info, "ferry: " + config->root.string() + " is trusted");
  return json{{"trusted", true}, {"root", config->root.string()}};
}

const std::vector<std::pair<std::string, Handler>>& commands() {
  static const std::vector<std::pair<std::string, Handler>> kCommands{
      {"ferry.run", run_command},       {"ferry.debug", debug_command}, {"ferry.train", train_command},
      {"ferry.sync", sync_command},     {"ferry.pull", pull_command},   {"ferry.stop", stop_command},
      {"ferry.tunnel", tunnel_command}, {"ferry.doctor", doctor_command}, {"ferry.gpu", gpu_command},
      {"ferry.trustProject", trust_command},
  };
  return kCommands;
}

}  // namespace

void show_file(ServerState& s, const fs::path& path, const std::string& what) {
  json params{{"uri", p::fs_path_to_file_uri(path)},
              {"takeFocus", false},
              // LSP4IJ reads `selection` without a null check: always send one.
              {"selection", {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 0}, {"character", 0}}}}}};
  auto shown = s.client.call("window/showDocument", std::move(params), std::chrono::seconds(10));
  bool ok = shown && shown->is_object() && shown->value("success", false);
  if (!ok) s.questions.show(MessageType::info, "ferry: " + what + ": " + path.string());
}

const std::vector<std::string>& lsp_command_ids() {
  static const std::vector<std::string> kIds = [] {
    std::vector<std::string> ids;
    for (const auto& [id, fn] : commands()) ids.push_back(id);
    return ids;
  }();
  return kIds;
}

std::expected<json, ResponseError> execute_command(ServerState& s, const std::string& command, const json& arguments,
                                                   p::CallContext& call) {
  for (const auto& [id, fn] : commands())
    if (id == command) return fn(s, command, arguments, call);
  std::string known;
  for (const auto& id : lsp_command_ids()) known += (known.empty() ? "" : ", ") + id;
  return std::unexpected(ResponseError{p::error_code::kInvalidParams, "unknown command " + command + " (ferry has " + known + ")",
                                       json{{"commands", lsp_command_ids()}}});
}

}  // namespace ferry::server
