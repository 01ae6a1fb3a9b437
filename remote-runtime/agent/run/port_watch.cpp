// PortWatch (port_watch.hpp): /proc/net/tcp{,6} and /proc/PID/{stat,fd}.
#include "remote-runtime/agent/run/port_watch.hpp"

#include <arpa/inet.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

namespace ferry::agent::run {

namespace fs = std::filesystem;

namespace {

// /proc/net/tcp's address: 8 hex digits (v4) or 32 (v6), each 32-bit word in host order.
std::string address_of(const std::string& hex, bool v6) {
  unsigned char bytes[16] = {};
  const std::size_t words = v6 ? 4 : 1;
  if (hex.size() != words * 8) return {};
  for (std::size_t w = 0; w < words; ++w) {
    const std::uint32_t word = static_cast<std::uint32_t>(std::stoul(hex.substr(w * 8, 8), nullptr, 16));
    std::memcpy(bytes + w * 4, &word, 4);
  }
  char text[INET6_ADDRSTRLEN] = {};
  return ::inet_ntop(v6 ? AF_INET6 : AF_INET, bytes, text, sizeof text) ? text : "";
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The process group of /proc/PID/stat (the field after the state, ppid), or -1.
pid_t group_of(const fs::path& stat_file) {
  const std::string text = read_text(stat_file);
  const auto close = text.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return -1;
  char state = 0;
  int ppid = 0, pgrp = -1;
  return std::sscanf(text.c_str() + close + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 ? pgrp : -1;
}

}  // namespace

std::vector<ListeningSocket> parse_listening(std::string_view text, bool v6) {
  std::vector<ListeningSocket> out;
  std::istringstream in{std::string(text)};
  std::string line;
  std::getline(in, line);  // the header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string slot, local, remote, state, queues, timer, retransmits;
    unsigned uid = 0, timeout = 0;
    unsigned long inode = 0;
    if (!(f >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode)) continue;
    const auto colon = local.rfind(':');
    if (state != "0A" || colon == std::string::npos || inode == 0) continue;  // 0A: LISTEN
    ListeningSocket s{inode, address_of(local.substr(0, colon), v6), static_cast<int>(std::stoul(local.substr(colon + 1), nullptr, 16)), uid};
    if (!s.address.empty()) out.push_back(std::move(s));
  }
  return out;
}

PortWatch::PortWatch(pid_t pgid, std::string proc) : pgid_(pgid), proc_(std::move(proc)), uid_(::geteuid()) {}

std::set<unsigned long> PortWatch::group_sockets() const {
  std::set<unsigned long> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(proc_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (group_of(entry.path() / "stat") != pgid_) continue;
    std::error_code fd_ec;
    for (const auto& fd : fs::directory_iterator(entry.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      const std::string target = fs::read_symlink(fd.path(), link_ec).string();
      unsigned long inode = 0;
      if (std::sscanf(target.c_str(), "socket:[%lu]", &inode) == 1) out.insert(inode);
    }
  }
  return out;
}

std::vector<PortChange> PortWatch::poll(bool look_for_new) {
  if (!look_for_new && open_.empty()) return {};  // nothing that could close
  std::map<unsigned long, ListeningSocket> now;
  for (const bool v6 : {false, true})
    for (auto& s : parse_listening(read_text(fs::path(proc_) / "net" / (v6 ? "tcp6" : "tcp")), v6))
      if (s.uid == uid_) now.emplace(s.inode, std::move(s));  // never another user's sockets
  std::vector<PortChange> changes;
  for (auto it = open_.begin(); it != open_.end();) {
    if (now.contains(it->first)) {
      ++it;
      continue;
    }
    changes.push_back({it->second.port, it->second.address, false});
    it = open_.erase(it);
  }
  if (!look_for_new) return changes;
  std::optional<std::set<unsigned long>> owned;  // looked up once, and only for a new inode
  for (auto& [inode, s] : now) {
    if (open_.contains(inode)) continue;
    auto judged = judged_.find(inode);
    if (judged == judged_.end()) {
      if (!owned) owned = group_sockets();
      judged = judged_.emplace(inode, owned->contains(inode)).first;
    }
    if (!judged->second) continue;
    changes.push_back({s.port, s.address, true});
    open_.emplace(inode, s);
  }
  std::erase_if(judged_, [&](const auto& kv) { return !now.contains(kv.first); });  // inodes are reused
  return changes;
}

}  // namespace ferry::agent::run
