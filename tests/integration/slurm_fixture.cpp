// The Slurm test cluster (see slurm_fixture.hpp).
#include "tests/integration/slurm_fixture.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/loopback_port.hpp"

namespace ferry::test {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

// A daemon died while the cluster started because another process took a port between
// free_loopback_port() and the bind: the start is tried again on new ports.
struct PortTaken : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Debian puts the daemons in /usr/sbin, which a non-root PATH may lack.
std::string find_program(const std::string& name) {
  std::vector<std::string> dirs{"/usr/sbin", "/usr/bin"};
  if (const char* path = std::getenv("PATH")) {
    std::istringstream in(path);
    for (std::string d; std::getline(in, d, ':');) dirs.push_back(d);
  }
  for (const auto& d : dirs)
    if (::access((d + "/" + name).c_str(), X_OK) == 0) return d + "/" + name;
  throw std::runtime_error(name + " not found: apt-get install --no-install-recommends slurmctld slurmd slurm-client munge "
                           "(scripts/setup.sh installs them)");
}

// Starts `argv` with stdout and stderr into `out`. The daemon gets SIGKILL when this process dies
// (a crashed or timed-out test must not leave a cluster running), so create clusters on a thread
// that lives as long as they do: the signal follows the thread that forked.
pid_t spawn_daemon(const std::vector<std::string>& argv, const fs::path& out) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const std::string out_path = out.string();
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed for " + argv[0]);
  if (pid == 0) {  // only async-signal-safe calls until exec
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int in = ::open("/dev/null", O_RDONLY);
    const int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (in < 0 || fd < 0) ::_exit(127);
    ::dup2(in, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

bool has_exited(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) == pid;
}

// SIGTERM to all, then SIGKILL to those still there after `grace`; returns once all are reaped.
// All at once: a slurmd still retrying its registration (no slurmctld) sits out SIGTERM.
void stop_processes(std::vector<pid_t> pids, std::chrono::milliseconds grace) {
  std::erase_if(pids, [](pid_t p) { return p <= 0 || has_exited(p); });
  for (pid_t p : pids) ::kill(p, SIGTERM);
  const auto deadline = Clock::now() + grace;
  while (!pids.empty() && Clock::now() < deadline) {
    std::erase_if(pids, has_exited);
    std::this_thread::sleep_for(5ms);  // polling our own children's exits, bounded by the deadline
  }
  for (pid_t p : pids) {
    ::kill(p, SIGKILL);
    int status = 0;
    ::waitpid(p, &status, 0);
  }
}

std::string short_hostname() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  std::string host = name;
  return host.substr(0, host.find('.'));
}

std::vector<int> distinct_ports(std::size_t n) {
  std::set<int> ports;
  while (ports.size() < n) ports.insert(free_loopback_port());
  return {ports.begin(), ports.end()};
}

// The value of `key=` in a line of `key=value` words (scontrol -o, jobcomp); "" when absent.
std::string field(const std::string& line, const std::string& key) {
  const std::string tag = key + "=";
  for (std::size_t at = line.find(tag); at != std::string::npos; at = line.find(tag, at + 1))
    if (at == 0 || line[at - 1] == ' ') {
      const std::size_t from = at + tag.size();
      return line.substr(from, line.find_first_of(" \n", from) - from);
    }
  return "";
}

SlurmJobState parse_job(const std::string& line, const std::string& source) {
  SlurmJobState s;
  s.state = field(line, "JobState");
  s.reason = source == "scontrol" ? field(line, "Reason") : "";
  s.nodes = field(line, "NodeList");
  s.source = source;
  const std::string exit = field(line, "ExitCode");  // "N:S"
  if (const auto colon = exit.find(':'); colon != std::string::npos) {
    s.exit_code = std::stoi(exit.substr(0, colon));
    s.signal = std::stoi(exit.substr(colon + 1));
  }
  return s;
}

// The jobcomp file's last line for `job_id` (a requeued job has one per run), or "".
std::string jobcomp_line(const fs::path& file, const std::string& job_id) {
  std::ifstream in(file);
  std::string found;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("JobId=" + job_id + " ", 0) == 0) found = line;
  return found;
}

std::string tail_of(const fs::path& file, std::size_t max_chars = 3000) {
  const std::string text = read_file(file);
  return text.size() > max_chars ? "..." + text.substr(text.size() - max_chars) : text;
}

// "PID STARTTIME" of a process (/proc/PID/stat's 22nd field: a pid reused later differs), or ""
// once it is gone.
std::string process_identity(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line) || line.rfind(')') == std::string::npos) return "";
  std::istringstream rest(line.substr(line.rfind(')') + 2));  // from field 3, the state
  std::string value;
  for (int field = 3; field <= 22 && rest >> value; ++field) {
  }
  return std::to_string(pid) + " " + value;
}

// Job steps and job processes of clusters whose test process died (a crash, ctest's timeout):
// their daemons went with it (PR_SET_PDEATHSIG), but slurmstepd is not their child and stays.
// Only clusters whose owner.pid names a process that is gone: a live test's cluster is never touched.
void kill_orphaned_job_processes() {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    const std::string name = e.path().filename();
    if (name.size() != 18 || name.rfind("ferry-slurm-", 0) != 0) continue;
    std::istringstream owner(read_file(e.path() / "owner.pid"));
    pid_t pid = 0;
    std::string started;
    if (!(owner >> pid >> started) || process_identity(pid) == std::to_string(pid) + " " + started) continue;
    const auto deadline = Clock::now() + 5s;
    for (auto left = slurm_processes(e.path()); !left.empty() && Clock::now() < deadline; left = slurm_processes(e.path())) {
      for (pid_t p : left) ::kill(p, SIGKILL);
      std::this_thread::sleep_for(5ms);  // until the kernel has taken them down, bounded by the deadline
    }
    fs::remove_all(e.path(), ec);
  }
}

}  // namespace

bool SlurmJobState::final() const {
  static const std::set<std::string> kFinal{"COMPLETED", "FAILED",   "CANCELLED", "TIMEOUT",      "NODE_FAIL",
                                            "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"};
  return kFinal.count(state) > 0;
}

SlurmCluster::SlurmCluster(SlurmOptions options) {
  const auto t0 = Clock::now();
  write_file(dir() / "owner.pid", process_identity(::getpid()));
  kill_orphaned_job_processes();
  try {
    start(options);
  } catch (const std::exception& e) {
    const std::string logs_now = logs();
    stop();
    throw std::runtime_error("slurm cluster in " + dir().string() + " did not start: " + e.what() + "\n" + logs_now);
  }
  start_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

SlurmCluster::~SlurmCluster() { stop(); }

void SlurmCluster::start(const SlurmOptions& options) {
  static std::atomic<int> counter{0};
  name_ = "ferry" + std::to_string(::getpid()) + "n" + std::to_string(++counter);
  start_munged();
  for (int attempt = 1;; ++attempt) {
    const auto ports = distinct_ports(3);
    ctld_port_ = ports[0];
    node_ports_ = {ports[1], ports[2]};
    write_conf(options);
    try {
      start_daemons(60s);
      wait_until_idle(60s);
      return;
    } catch (const PortTaken&) {
      if (attempt == 3) throw;
    }
    stop_slurm_daemons();  // all but munged, for a fresh start on other ports
    for (const char* old : {"state", "spool", "slurmctld.log", "slurmctld.out", "slurmd-n1.log", "slurmd-n1.out",
                            "slurmd-n2.log", "slurmd-n2.out"})
      fs::remove_all(dir() / old);
  }
}

void SlurmCluster::start_munged() {
  // munged refuses a socket in a directory others cannot search; TempDir makes it 0700.
  fs::permissions(dir(), fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  std::string key(1024, '\0');
  urandom.read(key.data(), static_cast<std::streamsize>(key.size()));
  write_file(dir() / "munge.key", key);
  fs::permissions(dir() / "munge.key", fs::perms::owner_read);
  const fs::path sock = dir() / "munge.sock";
  daemons_.push_back({"munged", spawn_daemon({find_program("munged"), "-F", "--key-file=" + (dir() / "munge.key").string(),
                                              "--socket=" + sock.string(), "--pid-file=" + (dir() / "munged.pid").string(),
                                              "--log-file=" + (dir() / "munged.log").string(),
                                              "--seed-file=" + (dir() / "munged.seed").string()},
                                             dir() / "munged.out")});
  const auto deadline = Clock::now() + 10s;
  while (!fs::exists(sock)) {
    check_daemons_alive();
    if (Clock::now() > deadline) throw std::runtime_error("munged made no socket in 10 s");
    std::this_thread::sleep_for(5ms);  // polling for the socket file, bounded by the deadline
  }
}

void SlurmCluster::write_conf(const SlurmOptions& options) const {
  const std::string d = dir().string(), host = short_hostname();
  const std::string user = ::getpwuid(::getuid())->pw_name;
  const std::string cpus = std::to_string(options.cpus_per_node);
  fs::create_directories(dir() / "state");
  fs::create_directories(dir() / "spool");
  std::ostringstream c;
  c << "ClusterName=" << name_ << "\nSlurmctldHost=" << host << "(127.0.0.1)\nSlurmctldPort=" << ctld_port_ << "\n"
    << "SlurmUser=" << user << "\nSlurmdUser=" << user << "\nStateSaveLocation=" << d << "/state\n"
    << "SlurmdSpoolDir=" << d << "/spool/%n\nSlurmctldPidFile=" << d << "/slurmctld.pid\n"
    << "SlurmdPidFile=" << d << "/slurmd-%n.pid\nSlurmctldLogFile=" << d << "/slurmctld.log\n"
    << "SlurmdLogFile=" << d << "/slurmd-%n.log\nAuthType=auth/munge\nAuthInfo=socket=" << d << "/munge.sock\n"
    << "CredType=cred/munge\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nMpiDefault=none\n"
    // CR_CPU: without it memory is consumable too and a one-CPU job takes a whole node.
    << "SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nSchedulerType=sched/backfill\n"
    // A batch job is scheduled when it is submitted, not up to 3 s later (Slurm's default delay).
    << "SchedulerParameters=batch_sched_delay=0\n"
    // The nodes' CPUs are what this file says, whatever this machine has (both slurmd share it).
    << "SlurmdParameters=config_overrides\nReturnToService=2\nKillWait=5\n"
    << "MinJobAge=" << options.min_job_age_s << "\nJobCompType=jobcomp/filetxt\nJobCompLoc=" << jobcomp_file().string()
    << "\n";
  for (std::size_t i = 0; i < node_ports_.size(); ++i)
    c << "NodeName=" << node_names()[i] << " NodeHostname=" << host << " NodeAddr=127.0.0.1 Port=" << node_ports_[i]
      << " CPUs=" << cpus << " State=UNKNOWN\n";
  c << "PartitionName=" << partition() << " Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP\n"
    << "PartitionName=" << second_partition() << " Nodes=n2 MaxTime=INFINITE State=UP\n"
    << options.extra_conf << "\n";
  write_file(conf(), c.str());
}

void SlurmCluster::start_daemons(std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  // Foreground (-D), so they are this process's children: their pids are known at once (no pid
  // file to wait for) and waitpid says when they are gone.
  daemons_.push_back({"slurmctld", spawn_daemon({find_program("slurmctld"), "-D", "-f", conf().string()},
                                                dir() / "slurmctld.out")});
  // The nodes once slurmctld listens (on every address): a slurmd that finds no slurmctld retries
  // its registration a second later, and a client command retries for MessageTimeout (10 s).
  for (;;) {
    check_daemons_alive();
    const unsigned long inode = listening_inode("0.0.0.0", ctld_port_);
    if (inode && process_has_socket(daemons_[1].pid, inode)) break;
    if (Clock::now() > deadline) throw std::runtime_error("slurmctld did not listen in time");
    std::this_thread::sleep_for(5ms);  // polling /proc for the listener, bounded by the deadline
  }
  for (const auto& node : node_names())
    daemons_.push_back({"slurmd " + node, spawn_daemon({find_program("slurmd"), "-D", "-f", conf().string(), "-N", node},
                                                       dir() / ("slurmd-" + node + ".out"))});
}

void SlurmCluster::check_daemons_alive() {
  for (auto& d : daemons_)
    if (has_exited(d.pid)) {
      d.pid = -1;
      const std::string message = d.name + " exited while the cluster started";
      if (logs().find("Address already in use") != std::string::npos) throw PortTaken(message);
      throw std::runtime_error(message);
    }
}

void SlurmCluster::wait_until_idle(std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  std::string last;
  for (;;) {
    check_daemons_alive();
    const SlurmRun r = run("scontrol show nodes -o");
    last = r.out + r.err;
    int idle = 0;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);)
      if (field(line, "State") == "IDLE") ++idle;
    if (r.status == 0 && idle == static_cast<int>(node_names().size())) return;
    if (Clock::now() > deadline) throw std::runtime_error("the nodes were not idle in time; scontrol said:\n" + last);
    // Each look is a client command (a fork and an RPC): a short pause between looks.
    std::this_thread::sleep_for(50ms);
  }
}

void SlurmCluster::stop_slurm_daemons() {
  std::vector<pid_t> pids;
  for (std::size_t i = 1; i < daemons_.size(); ++i) pids.push_back(daemons_[i].pid);
  stop_processes(pids, 5000ms);
  daemons_.resize(std::min<std::size_t>(daemons_.size(), 1));
}

void SlurmCluster::stop() noexcept {
  try {
    // The daemons first, so nothing starts more jobs. slurmd leaves job steps running on purpose
    // (a restarted slurmd finds them), so those and what jobs started are killed here.
    stop_slurm_daemons();
    const pid_t munged = daemons_.empty() ? -1 : daemons_[0].pid;
    const auto deadline = Clock::now() + 10s;
    for (;;) {
      auto left = slurm_processes(dir());
      std::erase(left, munged);
      if (left.empty() || Clock::now() > deadline) break;
      for (pid_t p : left) ::kill(p, SIGKILL);
      std::this_thread::sleep_for(5ms);  // until the kernel has taken them down, bounded by the deadline
    }
    stop_processes({munged}, 5000ms);
    daemons_.clear();
  } catch (...) {
  }
}

std::string SlurmCluster::env_prefix() const { return "SLURM_CONF='" + conf().string() + "' "; }

SlurmRun SlurmCluster::run(const std::string& command) const {
  static std::atomic<int> counter{0};
  const fs::path err = dir() / ("client-" + std::to_string(++counter) + ".err");
  const ShellRun r = run_shell("export " + env_prefix() + "; { " + command + "\n} </dev/null 2>'" + err.string() + "'");
  SlurmRun out{r.status, r.out, read_file(err)};
  std::error_code ec;
  fs::remove(err, ec);
  return out;
}

std::string SlurmCluster::submit(const std::string& args) const {
  const SlurmRun r = run("sbatch --parsable " + args);
  if (r.status != 0) throw std::runtime_error("sbatch " + args + " failed (" + std::to_string(r.status) + "): " + r.err);
  return r.out.substr(0, r.out.find_first_of(";\n"));  // "ID" or "ID;CLUSTER"
}

SlurmJobState SlurmCluster::job_state(const std::string& job_id) const {
  const SlurmRun r = run("scontrol show job -o " + job_id);
  if (r.status == 0 && r.out.find("JobState=") != std::string::npos) return parse_job(r.out, "scontrol");
  if (const std::string line = jobcomp_line(jobcomp_file(), job_id); !line.empty()) return parse_job(line, "jobcomp");
  return {};
}

SlurmJobState SlurmCluster::wait_job(const std::string& job_id, std::chrono::milliseconds limit) const {
  const auto deadline = Clock::now() + limit;
  for (;;) {
    SlurmJobState s = job_state(job_id);
    if (s.final() || Clock::now() > deadline) return s;
    std::this_thread::sleep_for(50ms);  // each look is an scontrol RPC: a short pause between looks
  }
}

std::vector<pid_t> SlurmCluster::processes() const { return slurm_processes(dir()); }

std::string SlurmCluster::logs() const {
  std::string out;
  for (const char* name : {"munged.log", "munged.out", "slurmctld.log", "slurmctld.out", "slurmd-n1.log", "slurmd-n1.out",
                           "slurmd-n2.log", "slurmd-n2.out"})
    if (fs::exists(dir() / name)) out += "--- " + std::string(name) + "\n" + tail_of(dir() / name) + "\n";
  return out;
}

namespace {

bool mentions(const fs::path& file, const std::string& what) {
  return read_proc_file(file.string()).find(what) != std::string::npos;
}

bool has_file_under(pid_t pid, const std::string& prefix) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec))
    if (fs::read_symlink(e.path(), ec).string().rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

std::vector<pid_t> slurm_processes(const fs::path& dir) {
  const std::string under = dir.string() + "/";
  // The conf path ends the variable: NUL-terminated in /proc/PID/environ.
  const std::string conf_var = std::string("SLURM_CONF=") + (dir / "slurm.conf").string() + '\0';
  std::map<pid_t, pid_t> parent;  // live processes only
  std::set<pid_t> found;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = std::stoi(name);
    const char state = state_of(pid);
    if (pid == ::getpid() || state == '\0' || state == 'Z') continue;
    parent[pid] = parent_of(pid);
    if (mentions(e.path() / "cmdline", under) || mentions(e.path() / "environ", conf_var) || has_file_under(pid, under))
      found.insert(pid);
  }
  for (bool grew = true; grew;) {  // and their children, down the tree
    grew = false;
    for (auto [pid, ppid] : parent)
      if (found.count(ppid) && found.insert(pid).second) grew = true;
  }
  return {found.begin(), found.end()};
}

}  // namespace ferry::test
