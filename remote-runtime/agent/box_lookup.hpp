// The look-ups a static agent does without glibc's NSS: a static binary's getpwuid/getaddrinfo
// would dlopen the box's NSS modules (built for another glibc) or silently see only part of the
// databases. The agent needs little: its own home (from /etc/passwd when $HOME is unset) and
// the address of a metadata or test host (a literal address, or a name in /etc/hosts).
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <expected>
#include <filesystem>
#include <optional>
#include <string>

namespace ferry::agent {

// The home directory /etc/passwd gives `uid` (its sixth field); nullopt when the uid has no line.
std::optional<std::string> passwd_home(uid_t uid, const std::filesystem::path& passwd = "/etc/passwd");

// $HOME when set, else passwd_home(getuid()).
std::optional<std::string> own_home();

struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family() const { return storage.ss_family; }
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

// `host` as an IPv4 or IPv6 literal ("[::1]" too), "localhost", or a name in `hosts`; with `port`.
std::expected<SocketAddress, std::string> resolve_address(const std::string& host, unsigned short port,
                                                          const std::filesystem::path& hosts = "/etc/hosts");

}  // namespace ferry::agent
