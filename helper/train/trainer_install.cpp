// See trainer_install.hpp.
#include "helper/train/trainer_install.hpp"

#include <array>
#include <deque>

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
setsid sh "$B" "$C" "$H" "$TV" "$TP" > "$L" 2>&1 < /dev/null &
P=$!
tail -n +1 -f --pid=$P "$L" 2>/dev/null
wait $P
S=$?
rm -f "$B"
echo "ferry-box: exit $S $L"
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
  auto r = e.exec(trainer_probe_script(interpreter, pack->key(), env), 120s);
  if (!r) return std::unexpected("probing the trainer on " + e.description() + ": " + r.error().message);
  if (r->exit_status != 0) return std::unexpected("probing the trainer on " + e.description() + " failed: " + r->err);
  return parse_trainer_probe(r->out);
}

std::expected<TrainerInstall, std::string> ensure_trainer(remote::SshEndpoint& e, const TrainerInstallOptions& o) {
  auto pack = trainer_pack();
  if (!pack) return std::unexpected(pack.error());
  auto probe = probe_trainer(e, o.interpreter, o.env);
  if (!probe) return std::unexpected(probe.error());
  if (!probe->ready.empty()) return TrainerInstall{probe->ready, false, probe->version, pack->key(), *probe};
  if (auto problem = trainer_probe_problem(*probe, o.interpreter))
    return std::unexpected("cannot build ferry-train on " + e.description() + ": " + *problem);
  const std::string prelude = trainer_env_prelude(o.interpreter, o.env);
  if (!probe->have_pack) {
    if (o.on_progress) {
      BuildProgressParser p;
      p.feed("ferry-box: stage upload");
      o.on_progress(p);
    }
    if (auto up = upload_pack(e, prelude, *pack); !up) return std::unexpected(up.error());
  }
  return run_build(e, prelude, *pack, *probe, o);
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
