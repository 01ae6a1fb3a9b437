// The sshd test fixture (see sshd_fixture.hpp).
#include "tests/integration/sshd_fixture.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <pwd.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "tests/support/temp_dir.hpp"

extern char** environ;

namespace ferry::test {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

ShellRun run_shell(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(command.c_str(), "r"), ::pclose);
  if (!p) throw std::runtime_error("popen failed: " + command);
  ShellRun r;
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p.get())) > 0) r.out.append(buf.data(), n);
  int status = ::pclose(p.release());
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string run_command(const std::string& command) {
  ShellRun r = run_shell(command);
  if (r.status != 0) throw std::runtime_error("command failed (" + std::to_string(r.status) + "): " + command + "\n" + r.out);
  return r.out;
}

int pick_free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

bool wait_for_port(int port, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::close(fd);
    if (rc == 0) return true;
    // Polling a local listen socket: a short pause between attempts, bounded by the deadline.
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

namespace {

pid_t spawn(const std::vector<std::string>& argv, const fs::path& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);
  return pid;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

SshdFixture::SshdFixture(SshdOptions options) : options_(std::move(options)) {
  std::string tmpl = (fs::temp_directory_path() / "ferry-sshd-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  fs::create_directories(home());
  fs::create_directories("/run/sshd");  // sshd's privilege-separation directory
  run_command("ssh-keygen -q -t ed25519 -N '' -C ferry-test-host -f '" + (dir_ / "host_ed25519").string() + "'");
  run_command("ssh-keygen -q -t ed25519 -N '' -C ferry-test-client -f '" + client_key().string() + "'");
  fs::copy_file(client_key().string() + ".pub", dir_ / "authorized_keys");
  if (!options_.bashrc.empty()) std::ofstream(home() / ".bashrc") << options_.bashrc;
  port_ = pick_free_port();
  write_sshd_config();
  std::ofstream(ssh_config()) << "Host " << alias() << "\n"
                              << "  HostName " << options_.address << "\n"
                              << "  Port " << port_ << "\n"
                              << "  User " << ::getpwuid(::getuid())->pw_name << "\n"
                              << "  IdentityFile " << client_key().string() << "\n"
                              << "  IdentitiesOnly yes\n"
                              << "  UserKnownHostsFile " << known_hosts().string() << "\n"
                              << "  GlobalKnownHostsFile none\n";
  std::ofstream(known_hosts()).flush();
  start();
}

// Processes whose environment has HOME=`home`: what sessions on this box started, including
// what left sshd's tree on purpose (run supervisors double-fork, runs outlive their link).
static std::vector<pid_t> processes_with_home(const fs::path& home) {
  const std::string entry = "HOME=" + home.string();
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream in(e.path() / "environ", std::ios::binary);
    for (std::string var; std::getline(in, var, '\0');)
      if (var == entry) {
        out.push_back(std::stoi(name));
        break;
      }
  }
  return out;
}

SshdFixture::~SshdFixture() {
  try {
    resume();
    kill_all();
    // Runs (and a debug adapter a run started) outlive a dropped link by design, so sshd's tree
    // misses them; they would otherwise outlive the test that made them.
    for (pid_t p : processes_with_home(home()))
      if (p != ::getpid()) ::kill(p, SIGKILL);
  } catch (...) {
  }
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

void SshdFixture::write_sshd_config() {
  std::ofstream(dir_ / "sshd_config") << "Port " << port_ << "\n"
                                      << "ListenAddress " << options_.address << "\n"
                                      << "HostKey " << (dir_ / "host_ed25519").string() << "\n"
                                      << "PidFile " << (dir_ / "sshd.pid").string() << "\n"
                                      << "AuthorizedKeysFile " << (dir_ / "authorized_keys").string() << "\n"
                                      << "PermitRootLogin prohibit-password\n"
                                      << "PasswordAuthentication no\n"
                                      << "KbdInteractiveAuthentication no\n"
                                      << "StrictModes no\n"
                                      << "UsePAM no\n"
                                      << "PrintMotd no\n"
                                      << "LogLevel " << options_.log_level << "\n"
                                      << "SetEnv HOME=" << home().string() << "\n"
                                      << (options_.sftp ? "Subsystem sftp internal-sftp\n" : "")
                                      << "AllowTcpForwarding yes\nGatewayPorts no\n"
                                      << options_.extra_sshd_config << "\n";
}

void SshdFixture::add_client_config(const std::string& text) const {
  std::ofstream(ssh_config(), std::ios::app) << text << "\n";
}

// The inode of the socket listening on address:port, from /proc/net/tcp (0 if none).
unsigned long listening_inode(const std::string& address, int port) {
  in_addr addr{};
  ::inet_pton(AF_INET, address.c_str(), &addr);
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // header
  char want[32];
  // The kernel prints the address's bytes as one host-order word: 127.0.0.1 is 0100007F.
  std::snprintf(want, sizeof want, "%08X:%04X", static_cast<unsigned>(addr.s_addr), port);
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, state, queues, tr, retr, uid, timeout;
    unsigned long inode = 0;
    f >> sl >> local >> remote >> state >> queues >> tr >> retr >> uid >> timeout >> inode;
    if (local == want && state == "0A") return inode;
  }
  return 0;
}

bool process_has_socket(pid_t pid, unsigned long inode) {
  std::error_code ec;
  std::string target = "socket:[" + std::to_string(inode) + "]";
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec))
    if (fs::read_symlink(e.path(), ec) == target) return true;
  return false;
}

void SshdFixture::start() {
  // Parallel tests pick ports too: the fixture is ready only when *its* sshd owns the listening
  // socket. If another process won the port, a fresh fixture takes a new one; a restart retries.
  bool fresh = pid_ == -1 && !fs::exists(dir_ / "started");
  for (int attempt = 0; attempt < 20; ++attempt) {
    pid_ = spawn({"/usr/sbin/sshd", "-D", "-e", "-f", (dir_ / "sshd_config").string()}, dir_ / "sshd.log");
    auto deadline = std::chrono::steady_clock::now() + 10s;
    bool exited = false;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited = true;
        break;
      }
      unsigned long inode = listening_inode(options_.address, port_);
      if (inode && process_has_socket(pid_, inode)) {
        std::ofstream(dir_ / "started").flush();
        return;
      }
      std::this_thread::sleep_for(5ms);  // polling /proc for the listener, bounded by the deadline
    }
    if (!exited) throw std::runtime_error("sshd did not start listening:\n" + log());
    pid_ = -1;
    if (fresh) {
      port_ = pick_free_port();
      write_sshd_config();
      std::string cfg;
      {
        std::ifstream in(ssh_config());
        cfg.assign(std::istreambuf_iterator<char>(in), {});
      }
      auto at = cfg.find("  Port ");
      cfg.replace(at, cfg.find('\n', at) - at, "  Port " + std::to_string(port_));
      std::ofstream(ssh_config()) << cfg;
    }
  }
  throw std::runtime_error("sshd could not bind a port:\n" + log());
}

std::string read_proc_file(const std::string& path);

namespace {
// /proc/PID/stat's state letter and parent pid ('\0' and -1 once the process is gone).
std::pair<char, pid_t> stat_of(pid_t pid) {
  std::string line = read_proc_file("/proc/" + std::to_string(pid) + "/stat");
  if (auto nl = line.find('\n'); nl != std::string::npos) line.resize(nl);
  if (line.empty()) return {'\0', -1};
  auto close = line.rfind(')');  // the name may hold spaces and parentheses
  if (close == std::string::npos) return {'\0', -1};
  std::istringstream rest(line.substr(close + 2));
  char state = '\0';
  pid_t ppid = -1;
  rest >> state >> ppid;
  return {state, ppid};
}
}  // namespace

std::string read_proc_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

std::string comm_of(pid_t pid) {
  std::string c = read_proc_file("/proc/" + std::to_string(pid) + "/comm");
  if (auto nl = c.find('\n'); nl != std::string::npos) c.resize(nl);
  return c;
}
pid_t parent_of(pid_t pid) { return stat_of(pid).second; }
char state_of(pid_t pid) { return stat_of(pid).first; }

std::vector<pid_t> live_children_named(const std::string& comm) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t p = std::stoi(name);
    if (comm_of(p) == comm && parent_of(p) == ::getpid() && state_of(p) != 'Z') out.push_back(p);
  }
  return out;
}

std::vector<pid_t> process_tree(pid_t root) {
  // Session processes call setsid(), so the process group misses them: walk /proc by parent pid.
  std::vector<std::pair<pid_t, pid_t>> all;
  for (const auto& e : fs::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    const pid_t pid = std::stoi(name);
    if (const pid_t ppid = parent_of(pid); ppid != -1) all.emplace_back(pid, ppid);
  }
  std::vector<pid_t> out{root};
  for (std::size_t i = 0; i < out.size(); ++i)
    for (auto [p, pp] : all)
      if (pp == out[i]) out.push_back(p);
  return out;
}

std::vector<pid_t> SshdFixture::tree() const { return process_tree(pid_); }

std::string SshdFixture::ssh_config_as(const std::string& host) const {
  std::string block = read_file(ssh_config());
  block.replace(block.find("Host " + alias()), 5 + alias().size(), "Host " + host);
  return block;
}

void SshdFixture::kill_all() {
  if (pid_ <= 0) return;
  for (pid_t p : tree()) ::kill(p, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

void SshdFixture::pause() {
  for (pid_t p : tree()) ::kill(p, SIGSTOP);
}

void SshdFixture::resume() {
  if (pid_ <= 0) return;
  for (pid_t p : tree()) ::kill(p, SIGCONT);
}

std::string SshdFixture::log() const { return slurp(dir_ / "sshd.log"); }

int SshdFixture::accepted_logins() const {
  const std::string text = log();
  int n = 0;
  for (std::size_t at = text.find("Accepted publickey for "); at != std::string::npos;
       at = text.find("Accepted publickey for ", at + 1))
    ++n;
  return n;
}

std::string SshdFixture::host_key_fingerprint() const {
  auto out = run_command("ssh-keygen -l -E sha256 -f '" + (dir_ / "host_ed25519.pub").string() + "'");
  auto start = out.find("SHA256:");
  return out.substr(start, out.find(' ', start) - start);
}

void SshdFixture::trust_host_key() const {
  std::istringstream in(slurp(dir_ / "host_ed25519.pub"));
  std::string type, b64;
  in >> type >> b64;
  std::ofstream(known_hosts(), std::ios::app) << "[" << options_.address << "]:" << port_ << " " << type << " " << b64 << "\n";
}

void SshdFixture::regenerate_host_key() {
  fs::remove(dir_ / "host_ed25519");
  fs::remove(dir_ / "host_ed25519.pub");
  run_command("ssh-keygen -q -t ed25519 -N '' -C ferry-test-host2 -f '" + (dir_ / "host_ed25519").string() + "'");
}

SshAgentProcess::SshAgentProcess(const fs::path& dir) {
  socket_ = dir / "agent.sock";
  pid_ = spawn({"/usr/bin/ssh-agent", "-D", "-a", socket_.string()}, dir / "ssh-agent.log");
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!fs::exists(socket_)) {
    if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("ssh-agent did not create its socket");
    std::this_thread::sleep_for(5ms);  // polling for the socket file, bounded by the deadline
  }
}

SshAgentProcess::~SshAgentProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

void SshAgentProcess::add(const fs::path& key) const {
  run_command("SSH_AUTH_SOCK='" + socket_.string() + "' ssh-add -q '" + key.string() + "' 2>&1");
}

}  // namespace ferry::test
