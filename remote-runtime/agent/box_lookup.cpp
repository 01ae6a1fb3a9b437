// Home and address look-ups without NSS: see box_lookup.hpp.
#include "remote-runtime/agent/box_lookup.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace ferry::agent {
namespace {

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string field;
  std::istringstream in(line);
  while (std::getline(in, field, sep)) out.push_back(field);
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

std::optional<SocketAddress> literal(const std::string& text, unsigned short port) {
  SocketAddress a;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.storage);
  if (::inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    a.length = sizeof(sockaddr_in);
    return a;
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
  if (::inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    a.length = sizeof(sockaddr_in6);
    return a;
  }
  return std::nullopt;
}

// The first address /etc/hosts gives `name` (case-insensitive, aliases count).
std::optional<std::string> hosts_entry(const std::string& name, const std::filesystem::path& hosts) {
  std::ifstream in(hosts);
  std::string line;
  auto lower = [](std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const std::string wanted = lower(name);
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string address, alias;
    if (!(words >> address)) continue;
    while (words >> alias)
      if (lower(alias) == wanted) return address;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> passwd_home(uid_t uid, const std::filesystem::path& passwd) {
  std::ifstream in(passwd);
  std::string line;
  const std::string wanted = std::to_string(uid);
  while (std::getline(in, line)) {
    auto f = split(line, ':');
    if (f.size() >= 6 && f[2] == wanted && !f[5].empty()) return f[5];
  }
  return std::nullopt;
}

std::optional<std::string> own_home() {
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h);
  return passwd_home(::getuid());
}

std::expected<SocketAddress, std::string> resolve_address(const std::string& host, unsigned short port,
                                                          const std::filesystem::path& hosts) {
  std::string bare = host;
  if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') bare = bare.substr(1, bare.size() - 2);
  if (auto a = literal(bare, port)) return *a;
  if (auto entry = hosts_entry(bare, hosts))
    if (auto a = literal(*entry, port)) return *a;
  if (bare == "localhost") return *literal("127.0.0.1", port);
  return std::unexpected("cannot resolve " + host + ": the agent takes an address, or a name listed in " + hosts.string());
}

}  // namespace ferry::agent
