// The interpreter probe, its pure half (the script, its command line, its answer parsed): see
// env_probe.hpp. Fuzzed by tests/fuzz/fuzz_env_probe.cpp; probe_env, which runs it, is in
// env_probe_exec.cpp.
#include "helper/env/env_probe.hpp"

#include "protocol/shell_words.hpp"
#include "protocol/json_parse.hpp"

namespace ferry::env {

namespace {

using json = nlohmann::json;

constexpr std::string_view kMarker = "FERRY-ENV-INFO ";

// Kept to what every CPython 3.8+ has; prints one marked line.
constexpr std::string_view kProbe = R"PY(
import json, os, platform, sys, sysconfig
out = {"python": platform.python_version(), "implementation": platform.python_implementation(),
       "executable": sys.executable, "platform": platform.platform(), "machine": platform.machine()}
std = set()
for key in ("stdlib", "platstdlib"):
    try:
        std.add(os.path.realpath(sysconfig.get_paths()[key]))
    except Exception:
        pass
def kind(p):
    inside = any(p == s or p.startswith(s + os.sep) for s in std)
    return "stdlib" if inside and "-packages" not in p else "site"
paths, seen = [], set()
for p in sys.path:
    if not p:
        continue
    a = os.path.realpath(p)
    if a in seen or not os.path.isdir(a):
        continue
    seen.add(a)
    paths.append({"path": a, "kind": kind(a)})
out["sysPath"] = paths
dists = {}
try:
    import importlib.metadata as md
    for d in md.distributions():
        name = d.metadata["Name"]
        if name and name.lower() not in dists:
            dists[name.lower()] = [name, d.version]
except Exception:
    pass
out["distributions"] = [{"name": n, "version": v} for n, v in sorted(dists.values(), key=lambda x: x[0].lower())]
if "torch" in sys.argv[1:]:
    try:
        import torch
        out["torch"] = torch.__version__
        out["torchCuda"] = torch.version.cuda or ""
        out["cudaAvailable"] = bool(torch.cuda.is_available())
        out["cudaDevices"] = torch.cuda.device_count() if out["cudaAvailable"] else 0
    except ImportError as e:
        if "torch" in dists:
            out["torchError"] = str(e)
    except BaseException as e:
        out["torchError"] = "%s: %s" % (type(e).__name__, e)
sys.stdout.write("FERRY-ENV-INFO " + json.dumps(out) + "\n")
)PY";

template <class T>
void read_opt(const json& j, const char* key, T& out) {
  if (auto it = j.find(key); it != j.end() && !it->is_null()) out = it->get<T>();
}

}  // namespace

json to_json(const EnvInfo& i) {
  json paths = json::array();
  for (const auto& p : i.sys_path) paths.push_back({{"path", p.path}, {"kind", p.kind}});
  json dists = json::array();
  for (const auto& d : i.distributions) dists.push_back({{"name", d.name}, {"version", d.version}});
  json j{{"interpreter", i.interpreter}, {"executable", i.executable}, {"python", i.python},
         {"implementation", i.implementation}, {"platform", i.platform}, {"machine", i.machine},
         {"sysPath", std::move(paths)}, {"distributions", std::move(dists)},
         {"torch", i.torch ? json(*i.torch) : json(nullptr)}, {"torchCuda", i.torch_cuda ? json(*i.torch_cuda) : json(nullptr)},
         {"cudaAvailable", i.cuda_available}, {"cudaDevices", i.cuda_devices}};
  if (!i.torch_error.empty()) j["torchError"] = i.torch_error;
  return j;
}

std::expected<EnvInfo, std::string> env_info_from_json(const json& j) {
  try {
    EnvInfo i;
    read_opt(j, "interpreter", i.interpreter);
    i.python = j.at("python").get<std::string>();
    read_opt(j, "executable", i.executable);
    read_opt(j, "implementation", i.implementation);
    read_opt(j, "platform", i.platform);
    read_opt(j, "machine", i.machine);
    for (const auto& p : j.at("sysPath")) i.sys_path.push_back({p.at("path").get<std::string>(), p.value("kind", "site")});
    if (j.contains("distributions"))
      for (const auto& d : j.at("distributions")) i.distributions.push_back({d.at("name").get<std::string>(), d.value("version", "")});
    if (j.contains("torch") && j["torch"].is_string()) i.torch = j["torch"].get<std::string>();
    if (j.contains("torchCuda") && j["torchCuda"].is_string()) i.torch_cuda = j["torchCuda"].get<std::string>();
    read_opt(j, "cudaAvailable", i.cuda_available);
    read_opt(j, "cudaDevices", i.cuda_devices);
    read_opt(j, "torchError", i.torch_error);
    for (const auto& p : i.sys_path)
      if (!p.path.starts_with('/')) return std::unexpected("sys.path entry '" + p.path + "' is not absolute");
    return i;
  } catch (const json::exception& e) {
    return std::unexpected(std::string("malformed interpreter report: ") + e.what());
  }
}

std::expected<std::vector<std::string>, std::string> probe_argv(const std::string& interpreter, bool with_torch) {
  auto argv = protocol::interpreter_words(interpreter);
  if (!argv) return argv;
  argv->insert(argv->end(), {"-c", std::string(kProbe)});
  if (with_torch) argv->push_back("torch");
  return argv;
}

std::expected<std::string, std::string> probe_command(const std::string& interpreter, bool with_torch) {
  auto argv = probe_argv(interpreter, with_torch);
  if (!argv) return std::unexpected(argv.error());
  // cd / first: sys.path[0] is the current directory for -c, and the probe wants none of it.
  // Every word quoted; only a leading "~/" is left to the box's shell (its home).
  std::string command = "cd / &&";
  for (const auto& word : *argv) command += ' ' + protocol::shell_quote_home(word);
  return command;
}

std::expected<EnvInfo, std::string> parse_probe_output(const std::string& text, const std::string& interpreter) {
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + at, end - at);
    at = end + 1;
    if (!line.starts_with(kMarker)) continue;
    line.remove_prefix(kMarker.size());
    auto j = protocol::parse_json_text(line);
    if (!j || !j->is_object()) return std::unexpected(std::string("the interpreter's report is not valid JSON"));
    auto info = env_info_from_json(*j);
    if (info) info->interpreter = interpreter;
    return info;
  }
  return std::unexpected(std::string("the interpreter printed no report"));
}

}  // namespace ferry::env
