// box_lookup: the static agent's home and host look-ups without NSS, against written passwd and
// hosts files (literal addresses of both families, aliases, comments, names it cannot resolve).
#define BOOST_TEST_MODULE box_lookup
#include <arpa/inet.h>
#include <netinet/in.h>

#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "remote-runtime/agent/box_lookup.hpp"

namespace fs = std::filesystem;
using ferry::agent::passwd_home;
using ferry::agent::resolve_address;

namespace {

struct Files {
  fs::path dir = fs::temp_directory_path() / ("box-lookup-" + std::to_string(::getpid()));
  Files() { fs::create_directories(dir); }
  ~Files() { fs::remove_all(dir); }
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return dir / name;
  }
};

std::string address_text(const ferry::agent::SocketAddress& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.family() == AF_INET) ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a.get())->sin_addr, buf, sizeof buf);
  else ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a.get())->sin6_addr, buf, sizeof buf);
  return buf;
}

}  // namespace

BOOST_AUTO_TEST_CASE(home_from_passwd) {
  Files f;
  auto passwd = f.write("passwd", "root:x:0:0:root:/root:/bin/bash\nbroken line\nml:x:1000:1000:ML,,,:/home/ml:/bin/zsh\n"
                                  "nohome:x:1001:1001::"
                                  ":/bin/sh\n");
  BOOST_TEST(passwd_home(0, passwd).value_or("") == "/root");
  BOOST_TEST(passwd_home(1000, passwd).value_or("") == "/home/ml");
  BOOST_TEST(!passwd_home(1001, passwd).has_value());  // an empty home field is no home
  BOOST_TEST(!passwd_home(4242, passwd).has_value());
  BOOST_TEST(!passwd_home(0, f.dir / "missing").has_value());
}

BOOST_AUTO_TEST_CASE(own_home_prefers_the_environment) {
  const char* saved = std::getenv("HOME");
  ::setenv("HOME", "/somewhere/else", 1);
  BOOST_TEST(ferry::agent::own_home().value_or("") == "/somewhere/else");
  if (saved) ::setenv("HOME", saved, 1);
}

BOOST_AUTO_TEST_CASE(addresses_literals_and_hosts_file) {
  Files f;
  auto hosts = f.write("hosts", "# comment metadata.internal\n127.0.0.1 localhost\n"
                                "169.254.169.254 Metadata.Google.Internal metadata # GCE\n::1 ip6-box\n");
  auto v4 = resolve_address("10.1.2.3", 80, hosts);
  BOOST_TEST_REQUIRE(v4.has_value());
  BOOST_TEST(address_text(*v4) == "10.1.2.3");
  BOOST_TEST(ntohs(reinterpret_cast<const sockaddr_in*>(v4->get())->sin_port) == 80);
  BOOST_TEST(v4->length == sizeof(sockaddr_in));
  auto v6 = resolve_address("[::1]", 8080, hosts);
  BOOST_TEST_REQUIRE(v6.has_value());
  BOOST_TEST(v6->family() == AF_INET6);
  BOOST_TEST(address_text(resolve_address("metadata.google.internal", 80, hosts).value()) == "169.254.169.254");
  BOOST_TEST(address_text(resolve_address("metadata", 80, hosts).value()) == "169.254.169.254");
  BOOST_TEST(resolve_address("ip6-box", 80, hosts).value().family() == AF_INET6);
  auto unknown = resolve_address("example.invalid", 80, hosts);
  BOOST_TEST_REQUIRE(!unknown.has_value());
  BOOST_TEST(unknown.error().find("cannot resolve example.invalid") != std::string::npos, unknown.error());
  // "localhost" resolves even where the hosts file lacks it.
  BOOST_TEST(address_text(resolve_address("localhost", 80, f.dir / "missing").value()) == "127.0.0.1");
}
