// Run state dir: see run_store.hpp.
#include "remote-runtime/agent/run/run_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <random>
#include <sstream>

#include "common/full_io.hpp"
#include "common/private_files.hpp"
#include "common/temp_name.hpp"
#include "common/unique_fd.hpp"
#include "protocol/json_parse.hpp"

namespace ferry::agent::run {

fs::path default_state_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "ferry" / "state";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".cache" / "ferry" / "state";
}

bool valid_run_id(std::string_view id) {
  if (id.size() != 20 || id[8] != '-' || id[15] != '-') return false;
  for (std::size_t i = 0; i < id.size(); ++i) {
    char c = id[i];
    if (i == 8 || i == 15) continue;
    bool digit = c >= '0' && c <= '9';
    bool hex = digit || (c >= 'a' && c <= 'f');
    if (i < 15 ? !digit : !hex) return false;
  }
  return true;
}

std::string iso_utc_ms(std::chrono::system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

std::expected<RunFiles, std::string> RunStore::create(std::chrono::system_clock::time_point now) const {
  // Private: the run ids (and each run's argv, env and output below) are nobody else's.
  std::error_code ec = ferry::posix::make_private_dirs(runs_dir().parent_path());
  if (!ec) ec = ferry::posix::make_private_dirs(runs_dir());
  if (ec) return std::unexpected("cannot create the run state dir '" + runs_dir().string() + "': " + ec.message());
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[20];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  std::random_device rd;
  for (int attempt = 0; attempt < 64; ++attempt) {
    char id[32];
    std::snprintf(id, sizeof id, "%s-%04x", stamp, static_cast<unsigned>(rd() & 0xffff));
    fs::path dir = runs_dir() / id;
    if (::mkdir(dir.c_str(), 0700) == 0) return RunFiles{id, dir};
    if (errno != EEXIST) return std::unexpected("cannot create '" + dir.string() + "': " + std::strerror(errno));
  }
  return std::unexpected("no free run id for " + std::string(stamp));
}

std::expected<RunFiles, std::string> RunStore::find(std::string_view id) const {
  if (!valid_run_id(id)) return std::unexpected("'" + std::string(id) + "' is not a run id");
  fs::path dir = runs_dir() / std::string(id);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::unexpected("no run '" + std::string(id) + "'");
  return RunFiles{std::string(id), dir};
}

std::vector<std::string> RunStore::ids(bool unended_only) const {
  // A box's history grows with every run: one readdir, and for `unended_only` one faccessat per
  // run relative to the folder (no path built, no stat), the cost of listing the running ones.
  std::vector<std::string> out;
  DIR* dir = ::opendir(runs_dir().c_str());
  if (!dir) return out;
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view name = e->d_name;
    if (!valid_run_id(name) || (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN)) continue;
    if (unended_only && ::faccessat(::dirfd(dir), (std::string(name) + "/exit.json").c_str(), F_OK, 0) == 0) continue;
    out.emplace_back(name);
  }
  ::closedir(dir);
  std::sort(out.rbegin(), out.rend());
  return out;
}

std::optional<json> read_json_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = protocol::parse_json_text(ss.str());
  if (!j || !j->is_object()) return std::nullopt;
  return std::move(*j);
}

bool write_json_atomic(const fs::path& path, const json& value, mode_t mode, Sync sync) {
  const fs::path tmp = path.parent_path() / ferry::posix::temp_name(path.filename().string());
  ferry::posix::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
  if (!fd) return false;
  ::fchmod(fd.get(), mode);  // exactly `mode`, whatever the umask
  const std::string text = value.dump() + "\n";
  bool ok = ferry::posix::write_full(fd.get(), text.data(), text.size()) >= 0;
  if (sync == Sync::before_rename) ok = ok && ::fsync(fd.get()) == 0;
  ok = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
  if (ok && sync == Sync::after_rename) ok = ::fsync(fd.get()) == 0;
  ok = fd.close() == 0 && ok;
  if (!ok) ::unlink(tmp.c_str());
  return ok;
}

bool sync_file(const fs::path& path) {
  ferry::posix::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  return fd && ::fsync(fd.get()) == 0;
}

bool supervisor_alive(long long pid, std::string_view id) {
  if (pid <= 0) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  // A zombie (killed, not yet reaped by init) answers kill(pid, 0) but supervises nothing.
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  auto paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  char state = stat[paren + 2];
  if (state == 'Z' || state == 'X') return false;
  // After a reboot the pid may belong to anything: it must be this run's supervisor.
  std::ifstream cmd_file("/proc/" + std::to_string(pid) + "/cmdline");
  std::string cmdline((std::istreambuf_iterator<char>(cmd_file)), std::istreambuf_iterator<char>());
  return cmdline.find("--supervise") != std::string::npos && cmdline.find(id) != std::string::npos;
}

std::optional<RunStatus> read_status(const RunFiles& run) {
  auto meta = read_json_file(run.meta());
  if (!meta) return std::nullopt;
  RunStatus status{std::move(*meta), read_json_file(run.exit()), "running"};
  if (status.exit) {
    status.state = "exited";
  } else {
    long long sup = status.meta.value("supervisorPid", 0LL);
    // exit.json may land between the two reads: look again before calling the run lost.
    if (!supervisor_alive(sup, run.id)) {
      status.exit = read_json_file(run.exit());
      status.state = status.exit ? "exited" : "lost";
    }
  }
  return status;
}

}  // namespace ferry::agent::run
