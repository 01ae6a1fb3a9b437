// A real OpenSSH server on 127.0.0.1 for integration tests: its own host key, client key,
// authorized_keys, sshd_config and client ssh config in a temp dir; nothing of the system's touched.
// Remote $HOME is the fixture's home/ (sshd SetEnv), so agent installs and .bashrc noise stay inside.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace ferry::test {

struct SshdOptions {
  std::string extra_sshd_config;  // appended to sshd_config
  std::string bashrc;             // written to the remote home's .bashrc (login noise)
  std::string log_level = "ERROR";  // INFO logs each accepted login (what connection counts read)
  std::string address = "127.0.0.1";  // any loopback address: two fixtures play two hosts
  bool sftp = true;                   // false: no sftp subsystem (boxes that disable it)
};

// `root` and every process below it, found through /proc by parent pid (session processes call
// setsid(), so a process group would miss them).
std::vector<pid_t> process_tree(pid_t root);
// /proc facts about one process: its name ("" once gone), its parent and its state letter
// (-1 and '\0' once gone).
std::string comm_of(pid_t pid);
// A /proc file's bytes, "" once its process is gone (even mid-read: ifstream throws there).
std::string read_proc_file(const std::string& path);
pid_t parent_of(pid_t pid);
char state_of(pid_t pid);
// This process's running (not zombie) children named `comm`: the `ssh` clients of OpenSSH lanes
// and tunnel masters.
std::vector<pid_t> live_children_named(const std::string& comm);

class SshdFixture {
 public:
  explicit SshdFixture(SshdOptions options = {});
  ~SshdFixture();
  SshdFixture(const SshdFixture&) = delete;
  SshdFixture& operator=(const SshdFixture&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path home() const { return dir_ / "home"; }  // the remote $HOME
  int port() const { return port_; }
  const std::string& address() const { return options_.address; }
  std::string alias() const { return "ferry-test"; }
  std::filesystem::path client_key() const { return dir_ / "client_ed25519"; }
  std::filesystem::path ssh_config() const { return dir_ / "ssh_config"; }
  // ssh_config()'s Host block under another name: several fixtures as several hosts in one file.
  std::string ssh_config_as(const std::string& host) const;
  std::filesystem::path known_hosts() const { return dir_ / "known_hosts"; }
  // The host key as OpenSSH prints its fingerprint ("SHA256:...").
  std::string host_key_fingerprint() const;
  // Writes the server's key to known_hosts, as `ssh-keyscan` would.
  void trust_host_key() const;
  // A new host key (the server must be restarted to use it).
  void regenerate_host_key();

  void start();
  // SIGKILL to the listener and every session process below it.
  void kill_all();
  // SIGSTOP / SIGCONT to the whole tree: the link hangs without closing.
  void pause();
  void resume();
  pid_t pid() const { return pid_; }
  std::string log() const;
  // Logins sshd accepted so far (needs log_level INFO or more).
  int accepted_logins() const;

  // Appends a Host block to ssh_config.
  void add_client_config(const std::string& text) const;

 private:
  std::vector<pid_t> tree() const;  // process_tree(pid())
  void write_sshd_config();

  std::filesystem::path dir_;
  SshdOptions options_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// A real ssh-agent holding one key, for agent-auth tests.
class SshAgentProcess {
 public:
  explicit SshAgentProcess(const std::filesystem::path& dir);
  ~SshAgentProcess();
  void add(const std::filesystem::path& key) const;
  const std::filesystem::path& socket() const { return socket_; }

 private:
  std::filesystem::path socket_;
  pid_t pid_ = -1;
};

// A shell command run to its end: its exit status (-1: not a normal exit) and its stdout (the
// command redirects stdin and stderr as it needs, e.g. `... </dev/null 2>&1`).
struct ShellRun {
  int status = -1;
  std::string out;
};
ShellRun run_shell(const std::string& command);
// Runs a shell command, returns its stdout; throws when it exits non-zero.
std::string run_command(const std::string& command);
// The inode of the socket listening on address:port, from /proc/net/tcp (0 if none), and whether
// `pid` holds it: a fixture's sshd is ready when its own process owns the listener.
unsigned long listening_inode(const std::string& address, int port);
bool process_has_socket(pid_t pid, unsigned long inode);
// Waits until connect() to 127.0.0.1:port succeeds or the deadline passes.
bool wait_for_port(int port, std::chrono::milliseconds timeout);
int pick_free_port();

}  // namespace ferry::test
