// Which TCP ports a run's processes listen on, for ports that forward themselves (docs/runs.md,
// "Ports a run opens"): the LISTEN sockets of /proc/net/tcp and tcp6 that belong to this user,
// matched to the run's process group through /proc/PID/fd. Only new socket inodes cost a look at
// the processes, one pass for all of them (a box where this user already has many listeners, as
// root has, judges them all in the first poll's single pass); an inode once judged keeps its
// verdict, so a poll on a quiet box reads two small files and nothing else.
#pragma once

#include <sys/types.h>

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::agent::run {

struct ListeningSocket {
  unsigned long inode = 0;
  std::string address;  // as bound: "127.0.0.1", "0.0.0.0", "::1", "::"
  int port = 0;
  unsigned uid = 0;
};

// The LISTEN rows of a /proc/net/tcp (v6: tcp6) text.
std::vector<ListeningSocket> parse_listening(std::string_view proc_net_tcp, bool v6);

struct PortChange {
  int port = 0;
  std::string address;
  bool open = true;  // false: the listener went
};

class PortWatch {
 public:
  // `pgid`: the run's process group (its processes: the command and what it starts, unless they
  // leave the group); `proc`: the proc file system's root (tests give another).
  explicit PortWatch(pid_t pgid, std::string proc = "/proc");

  // What changed since the last poll: listeners of the group that appeared, those that went.
  // Without `look_for_new`, only those that went (the run has ended: no pass over the processes,
  // and nothing read at all when none was open).
  std::vector<PortChange> poll(bool look_for_new = true);

 private:
  // The socket inodes the group's processes hold open: one pass over /proc.
  std::set<unsigned long> group_sockets() const;

  pid_t pgid_;
  std::string proc_;
  unsigned uid_;
  std::map<unsigned long, bool> judged_;             // inode -> the group's?
  std::map<unsigned long, ListeningSocket> open_;    // the group's listeners reported open
};

}  // namespace ferry::agent::run
