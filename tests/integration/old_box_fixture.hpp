// An old box for integration tests: a copy of the cached Debian 11 root (glibc 2.31, built by
// scripts/old_box_root.sh) running its own sshd in a chroot on 127.0.0.1, with a fresh host key
// ferry verifies and a fresh client key in root's authorized_keys. Torn down by its destructor.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace ferry::test {

// Where scripts/old_box_root.sh keeps the root: ${XDG_CACHE_HOME:-$HOME/.cache}/ferry/old-box/bullseye.
std::filesystem::path cached_old_box_root();

struct OldBoxOptions {
  std::filesystem::path cached_root = cached_old_box_root();
};

class OldBox {
 public:
  // Throws, naming scripts/old_box_root.sh, when the cached root is missing or incomplete.
  explicit OldBox(OldBoxOptions options = {});
  ~OldBox();
  OldBox(const OldBox&) = delete;
  OldBox& operator=(const OldBox&) = delete;

  // The box's / as seen from here (its /root is the remote $HOME).
  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path home() const { return root_ / "root"; }
  int port() const { return port_; }
  std::string alias() const { return "old-box"; }
  std::filesystem::path ssh_config() const { return dir_ / "ssh_config"; }
  std::string host_key_fingerprint() const;
  // Milliseconds spent copying the root and until its sshd listened.
  long copy_ms() const { return copy_ms_; }
  long start_ms() const { return start_ms_; }
  std::string sshd_log() const;

  // SIGKILL to every session process of the box's sshd (what serves a link), not the listener:
  // the links drop and new ones are accepted, as when a network path dies.
  void cut_sessions() const;
  // Processes (live, not zombies) whose root directory is this box's.
  std::vector<pid_t> processes() const;

 private:
  void prepare_root();
  void write_keys_and_configs();
  void start_sshd();
  void write_client_files() const;
  void tear_down() noexcept;

  OldBoxOptions options_;
  std::filesystem::path dir_;   // the copy and the client-side files beside it
  std::filesystem::path root_;  // dir_/root
  int port_ = 0;
  pid_t sshd_pid_ = -1;
  long copy_ms_ = 0;
  long start_ms_ = 0;
};

// Tears down one box directory: kills what runs in it, unmounts, deletes it only once nothing is
// mounted under it. Also what the constructor runs on boxes whose test process died.
void tear_down_old_box(const std::filesystem::path& dir);

}  // namespace ferry::test
