// See trainer_install.hpp.
#include "helper/train/trainer_install.hpp"

#include <array>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <iterator>
#include <mutex>

#include "helper/diagnostics/config_diagnostics.hpp"

#include "helper/remote/ssh_endpoint.hpp"
#include "helper/train/trainer_pack.hpp"

namespace ferry::training {
namespace {

using namespace std::chrono_literals;

// The box side of a build: extract build.sh from the pack, run it detached (a dropped link does
// not stop it; the next helper waits on its lock), and follow its log until it exits.
std::string build_command(const std::string& prelude, const std::string& key, const TrainerProbe& p) {
  std::string s = prelude;
  s += "H=" + shell_quote(key) + " TV=" + shell_quote(p.torch_version) + " TP=" + shell_quote(p.torch_prefix) + "\n";
  s += "export CXX=" + shell_quote(p.cxx) + "\n";
  s += R"SH(mkdir -p "$C/logs" || exit 1
# One log per attempt: a helper waiting on another's build must not follow (or truncate) its log.
L="$C/logs/$H-$TV-$(date -u +%Y%m%dT%H%M%SZ)-$$.log" B="$C/build-$H-$$.sh"
tar xzf "$C/packs/$H.tar.gz" -O build.sh > "$B" || { echo "ferry-box: exit 1 $L"; exit 1; }
: > "$L"
setsid sh "$B" "$C" "$H" "$TV" "$TP" "$L" > "$L" 2>&1 < /dev/null &
P=$!
tail -n +1 -f --pid=$P "$L" 2>/dev/null
wait $P
S=$?
rm -f "$B"
echo "ferry-box: exit $S $L"
)SH";
  return s;
}

// The same start as build_command's, but nothing follows: the build's exit is the log's last line
// ("ferry-box: ended STATUS"), and this returns once the build runs.
std::string background_build_command(const std::string& prelude, const std::string& key, const TrainerProbe& p) {
  std::string s = prelude;
  s += "H=" + shell_quote(key) + " TV=" + shell_quote(p.torch_version) + " TP=" + shell_quote(p.torch_prefix) + "\n";
  s += "export CXX=" + shell_quote(p.cxx) + "\n";
  s += R"SH(mkdir -p "$C/logs" || exit 1
L="$C/logs/$H-$TV-$(date -u +%Y%m%dT%H%M%SZ)-$$.log" B="$C/build-$H-$$.sh"
tar xzf "$C/packs/$H.tar.gz" -O build.sh > "$B" || exit 1
setsid sh -c 'sh "$1" "$2" "$3" "$4" "$5" "$6"; S=$?; rm -f "$1"; echo "ferry-box: ended $S"' ferry-build "$B" "$C" "$H" "$TV" "$TP" "$L" > "$L" 2>&1 < /dev/null &
echo "ferry-box: started $L"
)SH";
  return s;
}

std::expected<void, std::string> upload_pack(remote::SshEndpoint& e, const std::string& prelude, const TrainerPack& pack) {
  std::string s = prelude + "H=" + shell_quote(pack.key()) + "\n";
  s += R"SH(mkdir -p "$C/packs" || exit 1
T="$C/packs/.$H.$$.tmp"
cat > "$T" || exit 1
if [ "$(sha256sum "$T" | cut -c1-64)" = )SH" + pack.sha256 + R"SH( ]; then mv -f "$T" "$C/packs/$H.tar.gz"
else rm -f "$T"; echo "the trainer's sources changed on the way (sha256 mismatch)" >&2; exit 1; fi
)SH";
  auto r = e.exec(s, 300s, pack.bytes);
  if (!r) return std::unexpected("uploading the trainer's sources to " + e.description() + ": " + r.error().message);
  if (r->exit_status != 0) return std::unexpected("uploading the trainer's sources to " + e.description() + " failed: " + r->err);
  return {};
}

std::expected<TrainerInstall, std::string> run_build(remote::SshEndpoint& e, const std::string& prelude, const TrainerPack& pack,
                                                     const TrainerProbe& probe, const TrainerInstallOptions& o) {
  auto stream = e.open_stream(build_command(prelude, pack.key(), probe), 60s);
  if (!stream) return std::unexpected("starting the trainer's build on " + e.description() + ": " + stream.error().message);
  BuildProgressParser parser;
  std::deque<std::string> last;
  std::string pending, exit_line;
  std::array<char, 8192> buf{};
  const auto deadline = std::chrono::steady_clock::now() + 2h;
  for (;;) {
    auto n = (*stream)->read_some(buf, deadline);
    if (!n) return std::unexpected("following the trainer's build on " + e.description() + ": " + n.error().message +
                                   " (the build goes on; the next `ferry train` waits for it)");
    if (*n == 0) break;
    pending.append(buf.data(), *n);
    for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (line.starts_with("ferry-box: exit ")) {
        exit_line = line;
        continue;
      }
      last.push_back(line);
      if (last.size() > 25) last.pop_front();
      if (parser.feed(line) && o.on_progress) o.on_progress(parser);
    }
  }
  if (!parser.ready_path().empty() && exit_line.starts_with("ferry-box: exit 0 ")) {
    TrainerInstall done{parser.ready_path(), true, "", pack.key(), probe};
    if (auto v = e.exec("cat " + shell_quote(parser.ready_path().substr(0, parser.ready_path().rfind('/')) + "/version.txt"), 30s);
        v && v->exit_status == 0)
      done.version = v->out.substr(0, v->out.find('\n'));
    return done;
  }
  std::string log = exit_line.size() > 16 ? exit_line.substr(exit_line.find(' ', 16) + 1) : "";
  std::string message = "building ferry-train on " + e.description() + " failed (" +
                        (exit_line.empty() ? std::string("the build's output ended early") : exit_line.substr(11)) + ")";
  if (!log.empty()) message += "; its log is " + log + " on the box";
  message += "; the last lines:";
  for (const auto& l : last) message += "\n  " + l;
  return std::unexpected(message);
}

}  // namespace

std::expected<TrainerProbe, std::string> probe_trainer(remote::SshEndpoint& e, const std::string& interpreter,
                                                       const std::map<std::string, std::string>& env) {
  auto pack = trainer_pack();
  if (!pack) return std::unexpected(pack.error());
  auto script = trainer_probe_script(interpreter, pack->key(), env);
  if (!script) return std::unexpected("probing the trainer on " + e.description() + ": " + script.error());
  auto r = e.exec(*script, 120s);
  if (!r) return std::unexpected("probing the trainer on " + e.description() + ": " + r.error().message);
  if (r->exit_status != 0) return std::unexpected("probing the trainer on " + e.description() + " failed: " + r->err);
  return parse_trainer_probe(r->out);
}

namespace {

// Probe, and upload the pack when a build is needed: the ready trainer, or what a build needs.
struct Prepared {
  std::optional<TrainerInstall> ready;
  TrainerProbe probe;
  std::string prelude, key;
};

std::expected<Prepared, std::string> prepare_build(remote::SshEndpoint& e, const TrainerInstallOptions& o, const TrainerPack& pack) {
  auto probe = probe_trainer(e, o.interpreter, o.env);
  if (!probe) return std::unexpected(probe.error());
  if (!probe->ready.empty()) return Prepared{TrainerInstall{probe->ready, false, probe->version, pack.key(), *probe}, *probe, "", ""};
  if (auto problem = trainer_probe_problem(*probe, o.interpreter))
    return std::unexpected("cannot build ferry-train on " + e.description() + ": " + *problem);
  auto prelude = trainer_env_prelude(o.interpreter, o.env);
  if (!prelude) return std::unexpected(prelude.error());  // probe_trainer refused it already
  Prepared out{std::nullopt, *probe, std::move(*prelude), pack.key()};
  if (!probe->have_pack) {
    if (o.on_progress) {
      BuildProgressParser p;
      p.feed("ferry-box: stage upload");
      o.on_progress(p);
    }
    if (auto up = upload_pack(e, out.prelude, pack); !up) return std::unexpected(up.error());
  }
  return out;
}

}  // namespace

std::expected<TrainerInstall, std::string> ensure_trainer(remote::SshEndpoint& e, const TrainerInstallOptions& o) {
  auto pack = trainer_pack();
  if (!pack) return std::unexpected(pack.error());
  auto prepared = prepare_build(e, o, *pack);
  if (!prepared) return std::unexpected(prepared.error());
  if (prepared->ready) return std::move(*prepared->ready);
  return run_build(e, prepared->prelude, *pack, prepared->probe, o);
}

std::expected<TrainerBackgroundBuild, std::string> start_trainer_build(remote::SshEndpoint& e, const TrainerInstallOptions& o) {
  auto pack = trainer_pack();
  if (!pack) return std::unexpected(pack.error());
  auto prepared = prepare_build(e, o, *pack);
  if (!prepared) return std::unexpected(prepared.error());
  if (prepared->ready) return TrainerBackgroundBuild{std::move(prepared->ready), ""};
  auto r = e.exec(background_build_command(prepared->prelude, prepared->key, prepared->probe), 60s);
  if (!r) return std::unexpected("starting the trainer's build on " + e.description() + ": " + r.error().message);
  const std::string tag = "ferry-box: started ";
  auto at = r->out.find(tag);
  if (r->exit_status != 0 || at == std::string::npos)
    return std::unexpected("starting the trainer's build on " + e.description() + " failed: " + r->err);
  std::string log = r->out.substr(at + tag.size());
  return TrainerBackgroundBuild{std::nullopt, log.substr(0, log.find('\n'))};
}

std::expected<std::string, std::string> follow_trainer_build(remote::SshEndpoint& e, const std::string& log,
                                                             const std::function<void(const BuildProgressParser&)>& on_progress,
                                                             std::stop_token stop) {
  BuildProgressParser parser;
  std::size_t offset = 0;
  std::string pending;
  std::mutex m;
  std::condition_variable_any cv;
  while (!stop.stop_requested()) {
    // The log only grows: each look reads what was appended since the last.
    auto r = e.exec("tail -c +" + std::to_string(offset + 1) + " " + shell_quote(log), 30s);
    if (!r) return std::unexpected("following the trainer's build on " + e.description() + ": " + r.error().message +
                                   " (the build goes on; its log is " + log + " on the box)");
    if (r->exit_status != 0) return std::unexpected("the trainer's build log " + log + " is gone from " + e.description());
    offset += r->out.size();
    pending += r->out;
    for (auto nl = pending.find('\n'); nl != std::string::npos; nl = pending.find('\n')) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (line.starts_with("ferry-box: ended ")) {
        if (line == "ferry-box: ended 0" && !parser.ready_path().empty()) return parser.ready_path();
        return std::unexpected("building ferry-train on " + e.description() + " failed (" + line.substr(11) + "); its log is " + log +
                               " on the box");
      }
      if (parser.feed(line) && on_progress) on_progress(parser);
    }
    std::unique_lock lock(m);
    cv.wait_for(lock, stop, 1s, [] { return false; });
  }
  return std::unexpected("stopped following the trainer's build (it goes on; its log is " + log + " on the box)");
}

bool project_trains(const std::filesystem::path& root, bool has_train_launch) {
  if (has_train_launch) return true;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (int seen = 0; !ec && it != end && seen < 20000; it.increment(ec), ++seen) {
    const auto& path = it->path();
    const std::string name = path.filename().string();
    std::error_code fe;
    if (it->is_directory(fe)) {
      if (name.starts_with(".") || name == "node_modules" || name == "__pycache__") it.disable_recursion_pending();
      continue;
    }
    if (!name.ends_with(".json") || name == "ferry.json" || !it->is_regular_file(fe) || it->file_size(fe) > (1u << 20)) continue;
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (diagnostics::looks_like_train_config(text)) return true;
  }
  return false;
}

// The trainer ferry builds on the box: built (for which torch, CUDA or CPU, which distributed
// backends) or what its first build will use, or what is missing for it.
remote::DoctorCheck doctor_trainer_check(remote::SshEndpoint& e, const std::string& interpreter,
                                         const std::map<std::string, std::string>& env) {
  auto probe = probe_trainer(e, interpreter, env);
  if (!probe) return {"ferry-train", "warn", probe.error(), "re-run ferry doctor"};
  if (!probe->ready.empty()) return {"ferry-train", "pass", probe->ready + ": " + probe->version, ""};
  if (auto problem = trainer_probe_problem(*probe, interpreter)) return {"ferry-train", "warn", "ferry cannot build it on this box", *problem};
  return {"ferry-train", "pass",
          "not built yet; the first `ferry train` builds it against torch " + probe->torch_version + " (" + probe->torch_source + ", " +
              probe->torch_prefix + ") with " + probe->cxx_version + " and " + probe->cmake_version,
          ""};
}

}  // namespace ferry::training
