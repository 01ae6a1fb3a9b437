// The old-box test fixture (see old_box_fixture.hpp): copy, mounts, keys, the chroot's sshd, and a
// teardown that never deletes a root while something is still mounted in it.
#include "tests/integration/old_box_fixture.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/loopback_port.hpp"
#include "tests/support/temp_dir.hpp"

namespace ferry::test {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kPrefix = "ferry-old-box-";
// Written by scripts/old_box_root.sh as the build's last step: a root without it is incomplete.
constexpr const char* kKeyFile = "etc/ferry-old-box.key";

long ms_since(Clock::time_point t) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count());
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// /dev/shm when it has room (a copy is ~270 MB and copies faster there), else the temp dir.
fs::path box_base() {
  struct statvfs s{};
  if (::statvfs("/dev/shm", &s) == 0 && s.f_bavail * s.f_frsize > (2ull << 30)) return "/dev/shm";
  return fs::temp_directory_path();
}

bool alive(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH); }

// Boxes left by a test process that died before its teardown (a crash, a SIGKILL from ctest's
// timeout): torn down now, so their mounts and copies do not pile up. The owner's pid is in the
// name (ferry-old-box-PID-XXXXXX), so a box being made by a live test is never taken for one.
void sweep_dead_boxes() {
  for (const fs::path& base : {fs::path("/dev/shm"), fs::temp_directory_path()}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(base, ec)) {
      const std::string name = e.path().filename();
      if (name.rfind(kPrefix, 0) != 0) continue;
      const pid_t owner = static_cast<pid_t>(std::atol(name.c_str() + kPrefix.size()));
      if (!alive(owner)) tear_down_old_box(e.path());
    }
  }
}

// Live processes whose root directory is `root` (a zombie's root cannot be read).
std::vector<pid_t> processes_rooted_at(const fs::path& root) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code lec;
    if (fs::read_symlink(e.path() / "root", lec) == root) out.push_back(std::stoi(name));
  }
  return out;
}

// SIGKILL until none is left: a run's supervisor may fork between a scan and its kill.
void kill_processes_rooted_at(const fs::path& root) {
  const auto deadline = Clock::now() + 10s;
  for (auto pids = processes_rooted_at(root); !pids.empty(); pids = processes_rooted_at(root)) {
    for (pid_t p : pids) ::kill(p, SIGKILL);
    if (Clock::now() > deadline) {
      std::cerr << "old box: processes still running in " << root << " after 10 s\n";
      return;
    }
    std::this_thread::sleep_for(1ms);  // the kernel finishing the kills; re-checked, bounded above
  }
}

// Mount points at or under `dir`, deepest first (from /proc/self/mountinfo; octal escapes decoded).
std::vector<std::string> mounts_under(const fs::path& dir) {
  std::vector<std::string> out;
  std::ifstream in("/proc/self/mountinfo");
  const std::string d = dir.string();
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string id, parent, devno, fsroot, raw;
    f >> id >> parent >> devno >> fsroot >> raw;
    std::string point;
    for (std::size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '\\' && i + 3 < raw.size()) {
        point += static_cast<char>(std::stoi(raw.substr(i + 1, 3), nullptr, 8));
        i += 3;
      } else {
        point += raw[i];
      }
    }
    if (point == d || point.rfind(d + "/", 0) == 0) out.push_back(point);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  return out;
}

bool is_mountpoint(const fs::path& p) { return std::system(("mountpoint -q " + quoted(p)).c_str()) == 0; }

pid_t spawn_logged(const std::vector<std::string>& argv, const fs::path& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The box's sshd gets a box's environment, not the test runner's.
  char path[] = "PATH=/usr/sbin:/usr/bin:/sbin:/bin";
  char lang[] = "LANG=C";
  char* env[] = {path, lang, nullptr};
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, args[0], &fa, nullptr, args.data(), env);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);
  return pid;
}

}  // namespace

fs::path cached_old_box_root() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  fs::path cache = xdg && *xdg ? fs::path(xdg) : fs::path(home ? home : "/root") / ".cache";
  return cache / "ferry" / "old-box" / "bullseye";
}

void tear_down_old_box(const fs::path& dir) {
  const fs::path root = dir / "root";
  kill_processes_rooted_at(root);
  for (const auto& m : mounts_under(dir))
    if (::umount2(m.c_str(), 0) != 0 && ::umount2(m.c_str(), MNT_DETACH) != 0)
      std::cerr << "old box: cannot unmount " << m << ": " << std::strerror(errno) << "\n";
  // rm -rf through a bind-mounted /dev deletes the host's device nodes: delete only when provably
  // nothing is mounted, and even then never cross into another file system.
  if (is_mountpoint(root / "dev") || is_mountpoint(root / "proc") || !mounts_under(dir).empty()) {
    std::cerr << "old box: " << dir << " still has mounts; left in place\n";
    return;
  }
  if (std::system(("rm -rf --one-file-system " + quoted(dir)).c_str()) != 0)
    std::cerr << "old box: could not delete " << dir << "\n";
}

OldBox::OldBox(OldBoxOptions options) : options_(std::move(options)) {
  if (!fs::exists(options_.cached_root / kKeyFile))
    throw std::runtime_error("no Debian 11 root at " + options_.cached_root.string() +
                             " (or it is incomplete): build it with scripts/old_box_root.sh (scripts/test.sh runs it)");
  if (::geteuid() != 0) throw std::runtime_error("the old box needs root (it mounts proc and /dev and chroots)");
  const auto t0 = Clock::now();
  try {
    sweep_dead_boxes();
  } catch (const std::exception& e) {
    std::cerr << "old box: sweeping earlier boxes: " << e.what() << "\n";  // theirs, not this test's
  }
  std::string tmpl = (box_base() / (kPrefix + std::to_string(::getpid()) + "-XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed for " + tmpl);
  dir_ = fs::canonical(tmpl);  // /proc/PID/root shows the resolved path
  root_ = dir_ / "root";
  try {
    prepare_root();
    copy_ms_ = ms_since(t0);
    write_keys_and_configs();
    start_sshd();
    write_client_files();
  } catch (...) {
    tear_down();  // a constructor that throws gets no destructor call
    throw;
  }
  start_ms_ = ms_since(t0);
}

OldBox::~OldBox() { tear_down(); }

void OldBox::tear_down() noexcept {
  if (dir_.empty()) return;
  try {
    if (sshd_pid_ > 0) {
      for (pid_t p : process_tree(sshd_pid_)) ::kill(p, SIGKILL);
      ::waitpid(sshd_pid_, nullptr, 0);
      sshd_pid_ = -1;
    }
    tear_down_old_box(dir_);
  } catch (const std::exception& e) {
    std::cerr << "old box: tearing down " << dir_ << ": " << e.what() << "\n";
  }
  dir_.clear();
}

void OldBox::prepare_root() {
  run_command("cp -a " + quoted(options_.cached_root) + " " + quoted(root_) + " 2>&1");
  if (::mount("proc", (root_ / "proc").c_str(), "proc", 0, nullptr) != 0)
    throw std::runtime_error("mount proc in the old box: " + std::string(std::strerror(errno)));
  if (::mount("/dev", (root_ / "dev").c_str(), nullptr, MS_BIND, nullptr) != 0)
    throw std::runtime_error("bind /dev in the old box: " + std::string(std::strerror(errno)));
  fs::create_directories(root_ / "run" / "sshd");  // sshd's privilege-separation directory
}

// Keys as sshd_fixture makes them: a fresh host key (the box's sshd serves it, known_hosts pins
// it) and a fresh client key (root's authorized_keys holds it), so ferry verifies the host.
void OldBox::write_keys_and_configs() {
  run_command("ssh-keygen -q -t ed25519 -N '' -C old-box-host -f " + quoted(dir_ / "host_ed25519"));
  run_command("ssh-keygen -q -t ed25519 -N '' -C old-box-client -f " + quoted(dir_ / "client_ed25519"));
  fs::copy_file(dir_ / "host_ed25519", root_ / "etc/ssh/box_host");
  fs::copy_file(dir_ / "host_ed25519.pub", root_ / "etc/ssh/box_host.pub");
  fs::permissions(root_ / "etc/ssh/box_host", fs::perms::owner_read | fs::perms::owner_write);
  fs::create_directories(home() / ".ssh");
  fs::permissions(home() / ".ssh", fs::perms::owner_all);
  fs::copy_file(dir_ / "client_ed25519.pub", home() / ".ssh/authorized_keys");
  fs::permissions(home() / ".ssh/authorized_keys", fs::perms::owner_read | fs::perms::owner_write);
}

namespace {

std::string sshd_config(int port) {
  return "Port " + std::to_string(port) +
         "\nListenAddress 127.0.0.1\nHostKey /etc/ssh/box_host\nPidFile /run/box-sshd.pid\n"
         "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
         "UsePAM no\nPrintMotd no\nLogLevel INFO\nSubsystem sftp /usr/lib/openssh/sftp-server\n"
         "AllowTcpForwarding yes\n";
}

}  // namespace

// The box's own sshd (OpenSSH 8.4) in the chroot, in the foreground so its pid is ours. Ready
// when that pid owns the listening socket; a port another test won meanwhile: a new port.
void OldBox::start_sshd() {
  for (int attempt = 0; attempt < 20; ++attempt) {
    port_ = free_loopback_port();
    std::ofstream(root_ / "etc/ssh/box_config") << sshd_config(port_);
    sshd_pid_ = spawn_logged({"/usr/sbin/chroot", root_.string(), "/usr/sbin/sshd", "-D", "-e", "-f", "/etc/ssh/box_config"},
                             dir_ / "sshd.log");
    const auto deadline = Clock::now() + 20s;
    bool exited = false;
    while (!exited && Clock::now() < deadline) {
      exited = ::waitpid(sshd_pid_, nullptr, WNOHANG) == sshd_pid_;
      if (const auto inode = listening_inode("127.0.0.1", port_); !exited && inode && process_has_socket(sshd_pid_, inode)) return;
      std::this_thread::sleep_for(5ms);  // polling /proc for the listener, bounded by the deadline
    }
    if (!exited) throw std::runtime_error("the old box's sshd did not listen within 20 s:\n" + sshd_log());
    sshd_pid_ = -1;
    if (sshd_log().find("Address already in use") == std::string::npos)
      throw std::runtime_error("the old box's sshd exited:\n" + sshd_log());
  }
  throw std::runtime_error("the old box's sshd could not bind a port:\n" + sshd_log());
}

// The client's side, as sshd_fixture writes it: an ssh config naming the key, and known_hosts
// holding the box's host key for [127.0.0.1]:port (verified, never skipped).
void OldBox::write_client_files() const {
  std::ofstream(dir_ / "ssh_config") << "Host " << alias() << "\n  HostName 127.0.0.1\n  Port " << port_
                                     << "\n  User root\n  IdentityFile " << (dir_ / "client_ed25519").string()
                                     << "\n  IdentitiesOnly yes\n  UserKnownHostsFile " << (dir_ / "known_hosts").string()
                                     << "\n  GlobalKnownHostsFile none\n";
  std::istringstream pub(read_file(dir_ / "host_ed25519.pub"));
  std::string type, b64;
  pub >> type >> b64;
  std::ofstream(dir_ / "known_hosts") << "[127.0.0.1]:" << port_ << " " << type << " " << b64 << "\n";
}

std::string OldBox::host_key_fingerprint() const {
  const auto out = run_command("ssh-keygen -l -E sha256 -f " + quoted(dir_ / "host_ed25519.pub"));
  const auto start = out.find("SHA256:");
  return out.substr(start, out.find(' ', start) - start);
}

std::string OldBox::sshd_log() const { return read_file(dir_ / "sshd.log"); }

void OldBox::cut_sessions() const {
  for (pid_t p : process_tree(sshd_pid_))
    if (p != sshd_pid_) ::kill(p, SIGKILL);
}

std::vector<pid_t> OldBox::processes() const {
  std::vector<pid_t> out;
  for (pid_t p : processes_rooted_at(root_))
    if (state_of(p) != 'Z') out.push_back(p);
  return out;
}

}  // namespace ferry::test
