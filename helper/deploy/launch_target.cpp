// Launch entries resolved for the commands that start them: see launch_target.hpp.
#include "helper/deploy/launch_target.hpp"

namespace ferry::deploy {

namespace fs = std::filesystem;

namespace {

std::string in_quotes(std::string_view s) {
  std::string q(1, '"');
  q.append(s);
  q += '"';
  return q;
}

// "a/./b/" -> "a/b", "" and "." -> ""; nullopt for an absolute path or one with a ".." step.
std::optional<std::string> clean_relative(std::string_view path) {
  std::string out;
  for (const auto& part : fs::path(path)) {
    const std::string s = part.string();
    if (s == "/" || s == "..") return std::nullopt;
    if (s.empty() || s == ".") continue;
    if (!out.empty()) out += '/';
    out += s;
  }
  return out;
}

}  // namespace

std::expected<const LaunchEntry*, std::string> find_launch(const ProjectConfig& config, std::string_view name) {
  for (const auto& e : config.launch)
    if (e.name == name) return &e;
  std::string msg = "no launch entry " + in_quotes(name) + " in ferry.json";
  if (config.launch.empty()) return std::unexpected(msg + " (its \"launch\" list is empty; see docs/config.md#launch)");
  msg += "; there are:";
  // Appended piece by piece: `" " + string` trips GCC 12's -Wrestrict false positive.
  for (const auto& e : config.launch) msg.append(" ").append(in_quotes(e.name)).append(" (").append(e.kind).append(")");
  return std::unexpected(msg);
}

std::expected<void, std::string> check_launch_kind(const LaunchEntry& entry, std::string_view command) {
  const bool train = entry.kind == "train";
  if ((command == "train") == train) return {};
  std::string msg = "launch entry " + in_quotes(entry.name) + " is kind " + in_quotes(entry.kind) + ": ";
  if (train) return std::unexpected(msg + "start it with ferry train --launch " + entry.name);
  return std::unexpected(msg + "start it with ferry run --launch " + entry.name + " or ferry debug --launch " + entry.name);
}

std::map<std::string, std::string> launch_env(const ProjectConfig& config, const LaunchEntry& entry) {
  std::map<std::string, std::string> env = config.env;
  for (const auto& [k, v] : entry.env) env[k] = v;
  return env;
}

std::expected<LaunchCommand, std::string> launch_command(const ProjectConfig& config, const LaunchEntry& entry,
                                                         const std::vector<std::string>& extra_args,
                                                         std::string_view cwd_override) {
  if (auto kind = check_launch_kind(entry, "run"); !kind) return std::unexpected(kind.error());
  LaunchCommand out;
  const std::string_view cwd_given = cwd_override.empty() ? std::string_view(entry.cwd) : cwd_override;
  const auto cwd = clean_relative(cwd_given);
  if (!cwd) return std::unexpected("cwd " + in_quotes(cwd_given) + " is not a path inside the mapping root");
  out.cwd = *cwd;
  if (entry.module) {
    out.command = {"-m", *entry.module};
  } else if (entry.script) {
    if (config.mappings.empty()) return std::unexpected("ferry.json has no mappings");
    const auto in_mapping = path_in_mapping(*entry.script, config.mappings.front());
    if (!in_mapping)
      return std::unexpected("script " + in_quotes(*entry.script) + " is not inside the first mapping's folder " +
                             in_quotes(config.mappings.front().local));
    // The run starts in cwd; the script is named from there so argv[0] is a path that works.
    std::string script = out.cwd.empty() ? *in_mapping : fs::path(*in_mapping).lexically_relative(out.cwd).generic_string();
    // A bare name that is not a .py file would be looked up on PATH by exec.
    if (!script.ends_with(".py") && script.find('/') == std::string::npos) script = "./" + script;
    out.command = {script};
  } else {
    return std::unexpected("launch entry " + in_quotes(entry.name) + " names neither a script nor a module");
  }
  out.command.insert(out.command.end(), entry.args.begin(), entry.args.end());
  out.command.insert(out.command.end(), extra_args.begin(), extra_args.end());
  out.env = launch_env(config, entry);
  return out;
}

std::expected<fs::path, std::string> train_config_path(const ProjectConfig& config, const LaunchEntry& entry) {
  if (auto kind = check_launch_kind(entry, "train"); !kind) return std::unexpected(kind.error());
  if (!entry.config) return std::unexpected("launch entry " + in_quotes(entry.name) + " names no config");
  return (config.root / *entry.config).lexically_normal();
}

}  // namespace ferry::deploy
