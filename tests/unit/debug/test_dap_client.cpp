// The DAP test client against a real debugpy started directly (no ferry in between): attach,
// breakpoint, stopped at the right line, locals, continue, exit 0. The same scenario later runs
// through ferry's tunnel (tests/integration/test_debug_*.cpp).
#define BOOST_TEST_MODULE dap_client
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "helper/remote/child_process.hpp"
#include "tests/support/breakpoint_scenario.hpp"
#include "tests/support/dap_client.hpp"
#include "tests/support/loopback_port.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ferry::remote::ChildProcess;

namespace {

const fs::path kScript = fs::path(FERRY_SAMPLES_DIR) / "debug" / "loop.py";

std::string read_all(int fd) {
  std::string out;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(attach_break_inspect_continue_exit) {
  const int line = ferry::test::line_of(kScript, "ferry-test: breakpoint");
  BOOST_REQUIRE_GT(line, 0);
  const int port = ferry::test::free_loopback_port();
  ChildProcess debuggee;
  auto spawned = debuggee.spawn({"/usr/bin/python3", "-m", "debugpy", "--listen", "127.0.0.1:" + std::to_string(port),
                                 "--wait-for-client", kScript.string(), "5"});
  BOOST_REQUIRE_MESSAGE(spawned.has_value(), (spawned ? std::string() : spawned.error()));
  ::close(spawned->stdin_fd);

  auto seen = ferry::test::run_breakpoint_scenario(port, kScript, line);
  BOOST_REQUIRE_MESSAGE(seen.has_value(), (seen ? std::string() : seen.error()));
  BOOST_TEST(seen->stopped_reason == "breakpoint");
  BOOST_TEST(seen->stopped_line == line);
  BOOST_TEST(fs::path(seen->stopped_path) == kScript);
  BOOST_TEST(seen->first_i == "0");
  BOOST_TEST(seen->first_total == "0");
  BOOST_TEST(seen->second_i == "1");
  BOOST_TEST(seen->second_total == "0");
  BOOST_TEST(seen->terminated);
  if (seen->exit_code) BOOST_TEST(*seen->exit_code == 0);

  const std::string output = read_all(spawned->stdout_fd);
  auto status = debuggee.wait_for(20s);
  BOOST_REQUIRE(status);
  BOOST_TEST(WIFEXITED(*status));
  BOOST_TEST(WEXITSTATUS(*status) == 0);
  BOOST_TEST(output.find("sum of squares below 5: 30") != std::string::npos, output);
}

BOOST_AUTO_TEST_CASE(nothing_listening_is_a_clear_timeout) {
  const int port = ferry::test::free_loopback_port();
  auto client = ferry::test::DapClient::connect_and_initialize(port, 300ms);
  BOOST_REQUIRE(!client);
  BOOST_TEST(client.error().find("no debug adapter answered on 127.0.0.1:" + std::to_string(port)) != std::string::npos,
             client.error());
}
