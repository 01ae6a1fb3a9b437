// `ferry tunnel` as a user runs it, against a real sshd: the printed line names the chosen port,
// bytes flow through it, and Ctrl-C (SIGINT) closes the tunnel and exits 0.
#define BOOST_TEST_MODULE tunnel_cli
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <cstdio>
#include <regex>

#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/tcp_peers.hpp"

using namespace ferry::test;
using namespace std::chrono_literals;

BOOST_AUTO_TEST_CASE(ferry_tunnel_prints_forwards_and_stops_on_ctrl_c) {
  SshdFixture sshd;
  sshd.trust_host_key();
  EchoServer echo;
  int out[2];
  BOOST_REQUIRE(::pipe(out) == 0);
  std::string spec = "0:127.0.0.1:" + std::to_string(echo.port());
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
    ::chdir(sshd.dir().c_str());  // no ferry.json above
    ::execl(FERRY_BIN, FERRY_BIN, "-F", sshd.ssh_config().c_str(), "tunnel", "--host", sshd.alias().c_str(),
            spec.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  // The first stdout line: "127.0.0.1:PORT → remote 127.0.0.1:ECHO".
  std::string line;
  char c;
  pollfd p{out[0], POLLIN, 0};
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline && (line.empty() || line.back() != '\n')) {
    if (::poll(&p, 1, 1000) <= 0) continue;
    if (::read(out[0], &c, 1) != 1) break;
    line += c;
  }
  std::smatch m;
  bool matched = std::regex_search(line, m, std::regex(R"(^127\.0\.0\.1:(\d+) → remote 127\.0\.0\.1:(\d+)\n$)"));
  BOOST_REQUIRE_MESSAGE(matched, "stdout: " << line << "\n" << sshd.log());
  BOOST_TEST(std::stoi(m[2].str()) == echo.port());
  int port = std::stoi(m[1].str());

  int fd = tcp_connect("127.0.0.1", port);
  BOOST_REQUIRE(fd >= 0);
  write_all_fd(fd, "through ferry tunnel");
  ::shutdown(fd, SHUT_WR);
  BOOST_TEST(read_to_eof(fd, 10s) == "through ferry tunnel");
  ::close(fd);

  ::kill(pid, SIGINT);
  int status = 0;
  auto wait_deadline = std::chrono::steady_clock::now() + 20s;
  pid_t done = 0;
  while ((done = ::waitpid(pid, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < wait_deadline)
    ::poll(nullptr, 0, 20);  // waiting for the child's exit, bounded by the deadline
  if (done == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
  }
  BOOST_TEST(done == pid);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  BOOST_TEST(tcp_connect("127.0.0.1", port) == -ECONNREFUSED);
  ::close(out[0]);
}
