// An agent that goes away in the middle of a sync/push reaches the IDE as -32097 (AgentUnavailable:
// reconnect and retry), not -32094 (IoError): through a real server on pipes and the local
// sandbox's real agent, stopped (SIGSTOP) once connected so the push's first request waits in
// its pipe, then killed (SIGKILL) while the push waits for the answer. The kind is the engine's
// own (the endpoint's code), not read off the link's state: a push that fails locally while
// the link is up is -32094 through the same server.
#define BOOST_TEST_MODULE sync_agent_lost
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tests/support/serve_client.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using ferry::test::ServeClient;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

// This process's child named ferry-agent (the local host's agent), or -1.
pid_t local_agent() {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream children(task.path() / "children");
    for (pid_t pid; children >> pid;) {
      std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
      std::string name;
      std::getline(comm, name);
      if (name.starts_with("ferry-agent")) return pid;
    }
  }
  return -1;
}

// Bytes written to `pid`'s stdin that it has not read yet (its stdin is the server's pipe).
int unread_stdin(pid_t pid) {
  int fd = ::open(("/proc/" + std::to_string(pid) + "/fd/0").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  int n = 0;
  if (::ioctl(fd, FIONREAD, &n) != 0) n = -1;
  ::close(fd);
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_agent_killed_mid_push_is_agent_unavailable) {
  ferry::test::TempDir dir("ferry-sync-agent-lost");
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
  ::setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1);
  ferry::test::write_file(dir / "proj" / "ferry.json", R"({"name": "lost", "host": "local"})");
  for (int i = 0; i < 20; ++i) ferry::test::write_file(dir / "proj" / ("f" + std::to_string(i) + ".py"), "print(1)\n");
  ServeClient client(dir / "proj");
  auto connected = client.call("host/connect", json::object());
  BOOST_REQUIRE_MESSAGE(connected.contains("result"), connected.dump());
  const pid_t agent = local_agent();
  BOOST_REQUIRE(agent > 0);
  BOOST_REQUIRE(unread_stdin(agent) == 0);

  BOOST_REQUIRE(::kill(agent, SIGSTOP) == 0);
  const int push = client.request("sync/push", json::object());
  // The push's first request to the agent sits in the agent's pipe: it is mid-sync now.
  BOOST_REQUIRE(ferry::test::eventually([&] { return unread_stdin(agent) > 0; }, 20s));
  BOOST_REQUIRE(::kill(agent, SIGKILL) == 0);
  auto r = client.wait_response(push);
  BOOST_REQUIRE_MESSAGE(r.contains("error"), r.dump());
  BOOST_TEST_MESSAGE("the push answered " << r.dump());
  BOOST_TEST(r["error"]["code"] == -32097, r.dump());
  BOOST_TEST(r["error"]["message"].get<std::string>().starts_with("sync/push: "), r.dump());

  // The next push links again (a fresh agent) and sends the tree.
  auto again = client.call("sync/push", json::object());
  BOOST_REQUIRE_MESSAGE(again.contains("result"), again.dump());
  BOOST_TEST(again["result"]["filesSent"].get<int>() >= 20, again.dump());
}

BOOST_AUTO_TEST_CASE(a_push_that_cannot_write_its_local_state_is_io_error) {
  ferry::test::TempDir dir("ferry-sync-io-kind");
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
  ::setenv("XDG_CACHE_HOME", (dir / "cache").c_str(), 1);
  ferry::test::write_file(dir / "proj" / "ferry.json", R"({"name": "io", "host": "local"})");
  ferry::test::write_file(dir / "proj" / "train.py", "print(1)\n");
  // .ferry is a file: the project's sync lock (.ferry/sync.lock) cannot be made (as root, a
  // read-only mode would not stop the write).
  ferry::test::write_file(dir / "proj" / ".ferry", "not a folder\n");
  ServeClient client(dir / "proj");
  auto connected = client.call("host/connect", json::object());
  BOOST_REQUIRE_MESSAGE(connected.contains("result"), connected.dump());
  auto r = client.call("sync/push", json::object());
  BOOST_REQUIRE_MESSAGE(r.contains("error"), r.dump());
  BOOST_TEST(r["error"]["code"] == -32094, r.dump());
  BOOST_TEST(r["error"]["message"].get<std::string>().starts_with("sync/push: cannot open "), r.dump());
  // The link is still up: the failure was local, and says so.
  auto status = client.call("sync/status", json::object());
  BOOST_TEST(status["result"]["connected"] == true, status.dump());
}
