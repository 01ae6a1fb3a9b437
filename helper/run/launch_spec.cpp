// Turning `ferry run -- CMD...` plus ferry.json into run/start params.
#include "helper/run/launch_spec.hpp"

#include <filesystem>

#include "protocol/slurm_alloc.hpp"

namespace ferry::run {

namespace {
// Built by appending: GCC 12 misreports `"\"" + std::string(...)` under -Wrestrict.
std::string quote_text(std::string_view text) {
  std::string q;
  q += '"';
  q.append(text);
  q += '"';
  return q;
}
}  // namespace

json RunSpec::to_json() const {
  json j{{"argv", argv}, {"cwd", cwd}, {"env", env}};
  if (tty) {
    j["tty"] = true;
    if (cols > 0) j["cols"] = cols;
    if (rows > 0) j["rows"] = rows;
  }
  if (slurm) j["slurm"] = protocol::to_json(*slurm);
  return j;
}

std::expected<std::vector<std::string>, std::string> resolve_argv(const std::vector<std::string>& command,
                                                                  std::string_view interpreter) {
  if (command.empty() || command.front().empty()) return std::unexpected("no command to run (give it after --)");
  const std::string& first = command.front();
  bool script = first.size() > 3 && first.ends_with(".py");
  bool flag = first == "-m" || first == "-c";
  bool bare_python = first == "python" || first == "python3";
  if (!script && !flag && !bare_python) return command;
  auto interp = protocol::interpreter_words(interpreter);
  if (!interp) return std::unexpected("interpreter " + quote_text(interpreter) + ": " + interp.error());
  std::vector<std::string> argv = *interp;
  argv.insert(argv.end(), command.begin() + (bare_python ? 1 : 0), command.end());
  return argv;
}

std::expected<std::string, std::string> normalize_relative(std::string_view path) {
  if (path.empty()) return ".";
  std::filesystem::path p(path);
  if (p.is_absolute()) return std::unexpected(quote_text(path) + " is absolute; give it relative to the mapping root");
  std::string out;
  for (const auto& part : p) {
    std::string s = part.string();
    if (s.empty() || s == ".") continue;
    if (s == "..") return std::unexpected(quote_text(path) + " leaves the mapping root");
    if (!out.empty()) out += '/';
    out += s;
  }
  return out.empty() ? "." : out;
}

std::expected<RunSpec, std::string> make_run_spec(const LaunchRequest& request) {
  RunSpec spec;
  auto argv = resolve_argv(request.command, request.interpreter);
  if (!argv) return std::unexpected(argv.error());
  spec.argv = std::move(*argv);

  auto cwd = normalize_relative(request.cwd);
  if (!cwd) return std::unexpected("--cwd " + cwd.error());
  auto base = normalize_relative(request.remote_base);
  if (!base) return std::unexpected("mapping " + base.error());
  if (*base == ".") spec.cwd = *cwd;
  else if (*cwd == ".") spec.cwd = *base;
  else spec.cwd = *base + '/' + *cwd;

  spec.env = request.config_env;
  for (const auto& kv : request.cli_env) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) return std::unexpected("--env " + quote_text(kv) + ": expected KEY=VALUE");
    spec.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  // The mapping root first on the path, so `import mypkg` finds the synced tree as it does locally.
  if (!request.mapping_root.empty()) {
    auto it = spec.env.find("PYTHONPATH");
    std::string configured = it == spec.env.end() ? "" : it->second;
    spec.env["PYTHONPATH"] = request.mapping_root + (configured.empty() ? "" : ":" + configured);
  }
  // Without it Python block-buffers a pipe and the output arrives in lumps at exit.
  spec.env.try_emplace("PYTHONUNBUFFERED", "1");
  if (request.slurm && request.allocation.empty() && request.tty)
    return std::unexpected("a run on a Slurm cluster has no terminal (--tty) unless it goes into an allocation (ferry alloc): "
                           "a job's output comes from its files");
  spec.tty = request.tty;
  spec.cols = request.cols;
  spec.rows = request.rows;
  if (!request.allocation.empty()) {
    auto step = protocol::srun_step_arguments(request.allocation, request.allocation_node, request.tty);
    spec.argv.insert(spec.argv.begin(), step.begin(), step.end());
  } else {
    spec.slurm = request.slurm;
  }
  return spec;
}

}  // namespace ferry::run
