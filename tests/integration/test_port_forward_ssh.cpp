// Ports that forward themselves, over a real sshd: a run that starts `python3 -m http.server 0`
// on the box gets it forwarded to this machine's loopback by ferry run (announced on stderr with
// its URL, a GET through it returns the page), and the forward is gone once the server exits;
// a listener of a process that is not the run's (this test's own) is never announced; ferry.json's
// "autoForwardPorts": false turns it off; and in ferry serve the forward is offered to the editor
// with an action that opens the browser (window/showDocument, external), then listed as a tunnel.
#define BOOST_TEST_MODULE port_forward_ssh
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/ferry_process.hpp"
#include "tests/support/serve_client.hpp"
#include "tests/support/tcp_peers.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using ferry::test::SshdFixture;
using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

struct Ferry : ferry::test::FerryProcess {
  Ferry(const fs::path& cwd, const std::vector<std::string>& args, bool stdin_pipe = false)
      : FerryProcess(FERRY_BIN, cwd, args, stdin_pipe) {}
};

// A project on the fixture's box with a page to serve.
struct Project {
  SshdFixture sshd;
  ferry::test::TempDir dir{"ferry-ports"};
  explicit Project(json auto_forward = true) {
    sshd.trust_host_key();
    json cfg{{"name", "ports"},
             {"host", sshd.alias()},
             {"sshConfig", sshd.ssh_config().string()},
             {"interpreter", "/usr/bin/python3 -u"},
             {"env", {{"PYTHONUNBUFFERED", "1"}}},
             {"autoForwardPorts", auto_forward},
             {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}};
    ferry::test::write_file(dir / "ferry.json", cfg.dump());
    ferry::test::write_file(dir / "site" / "index.html", "<p>served on the box</p>\n");
    // A server the run starts (a process of its group), stopped on the first line of stdin.
    ferry::test::write_file(dir / "serve.py",
                            "import subprocess, sys\n"
                            "srv = subprocess.Popen([sys.executable, '-m', 'http.server', '0', '--bind', '127.0.0.1', '--directory', 'site'])\n"
                            "sys.stdin.readline()\n"
                            "srv.terminate(); srv.wait()\n"
                            "print('server stopped', flush=True)\n"
                            "sys.stdin.readline()\n");
  }
};

// GET / from 127.0.0.1:port (HTTP/1.0: the server closes when done); the body, "" when refused.
std::string get_page(int port) {
  const int fd = ferry::test::tcp_connect("127.0.0.1", port);
  if (fd < 0) return "";
  ferry::test::write_all_fd(fd, "GET /index.html HTTP/1.0\r\n\r\n");
  const std::string response = ferry::test::read_to_eof(fd, 10s);
  ::close(fd);
  const auto at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

}  // namespace

BOOST_AUTO_TEST_CASE(ferry_run_forwards_the_runs_server_while_it_listens) {
  Project p;
  ferry::test::EchoServer unrelated;  // listening on the box's loopback before the run, not the run's
  Ferry run(p.dir.path(), {"run", "--", "serve.py"}, true);
  BOOST_REQUIRE_MESSAGE(run.wait_out("Serving HTTP on 127.0.0.1 port", 120s), run.out() + run.err());
  const auto listening = Clock::now();
  BOOST_REQUIRE_MESSAGE(run.wait_out("\u2192 http://127.0.0.1:", 30s, true), run.err());
  const double after_s = std::chrono::duration<double>(Clock::now() - listening).count();
  BOOST_TEST_MESSAGE("announced " << after_s << " s after the server said it listens");
  BOOST_TEST(after_s < 5.0);  // the agent looks every 250 ms: a loaded CI machine still makes it well inside this
  std::smatch m;
  const std::string err = run.err();
  BOOST_REQUIRE_MESSAGE(std::regex_search(err, m, std::regex("port (\\d+) on the box \u2192 http://127\\.0\\.0\\.1:(\\d+)")), err);
  const int box_port = std::stoi(m[1].str()), local_port = std::stoi(m[2].str());
  BOOST_TEST(run.out().find("port " + std::to_string(box_port)) != std::string::npos, run.out());  // the server's own line names it
  // The box is this machine, so its port is taken here: the forward listens on another one.
  BOOST_TEST(local_port != box_port);
  BOOST_TEST(get_page(local_port) == "<p>served on the box</p>\n");

  run.write_stdin("\n");  // the run stops its server and goes on: the forward goes, said so
  const std::string closed = "port " + std::to_string(box_port) + " on the box closed; its tunnel is gone";
  BOOST_REQUIRE_MESSAGE(run.wait_out(closed, 30s, true), run.err());
  BOOST_TEST(run.out().find("server stopped") != std::string::npos, run.out());
  BOOST_TEST(ferry::test::tcp_connect("127.0.0.1", local_port) < 0);
  run.close_stdin();
  BOOST_TEST(run.wait(60s) == 0, run.err());
  BOOST_TEST(run.err().find("port " + std::to_string(unrelated.port())) == std::string::npos, run.err());
}

BOOST_AUTO_TEST_CASE(autoforwardports_false_forwards_nothing) {
  Project p(false);
  Ferry run(p.dir.path(), {"run", "--", "python3", "-c",
                           "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); "
                           "print('listening', s.getsockname()[1], flush=True); time.sleep(1.5); print('done')"});
  BOOST_TEST(run.wait(120s) == 0, run.err());
  BOOST_TEST(run.out().find("done") != std::string::npos, run.out());  // it listened for 1.5 s, announced above within 0.25
  BOOST_TEST(run.err().find("on the box") == std::string::npos, run.err());
}

// In ferry serve: the forward is offered with an action that opens the browser, appears among the
// tunnels, and goes (said in the log) when the server stops.
BOOST_AUTO_TEST_CASE(the_editor_is_offered_the_forward_in_the_browser) {
  Project p;
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);  // the server in this process finds no agent beside it
  ferry::test::ServeClient c(p.dir.path());
  auto answer = [](const json& request) -> json {
    if (request["method"] == "window/showMessageRequest") return {{"result", {{"title", "Open in Browser"}}}};
    if (request["method"] == "window/showDocument") return {{"result", {{"success", true}}}};
    return {{"result", nullptr}};
  };
  BOOST_REQUIRE(c.call("sync/push", json::object(), answer, 120s).contains("result"));
  auto started = c.call("run/start", {{"argv", {"serve.py"}}}, answer, 120s);
  BOOST_REQUIRE_MESSAGE(started.contains("result"), started.dump());
  const std::string id = started["result"]["id"];
  auto offered = c.wait_request("window/showMessageRequest", 60s, answer);
  BOOST_REQUIRE(offered);
  const std::string message = (*offered)["params"]["message"];
  std::smatch m;
  BOOST_REQUIRE_MESSAGE(std::regex_search(message, m, std::regex("serve\\.py: port (\\d+) on the box \u2192 http://127\\.0\\.0\\.1:(\\d+)")), message);
  const int local_port = std::stoi(m[2].str());
  BOOST_TEST((*offered)["params"]["actions"][0]["title"] == "Open in Browser");
  auto shown = c.wait_request("window/showDocument", 10s, answer);
  BOOST_REQUIRE(shown);
  BOOST_TEST((*shown)["params"]["external"] == true);
  BOOST_TEST((*shown)["params"]["uri"] == "http://127.0.0.1:" + std::to_string(local_port));
  BOOST_TEST(get_page(local_port) == "<p>served on the box</p>\n");
  auto listed = [&] {
    auto l = c.call("tunnel/list", json::object(), answer);
    for (const auto& t : l["result"]["tunnels"])
      if (t.value("localPort", 0) == local_port) return true;
    return false;
  };
  BOOST_TEST(listed());

  BOOST_REQUIRE(c.call("run/input", {{"id", id}, {"text", "\n"}}, answer).contains("result"));
  auto closed = c.wait_notification(
      [&](const json& n) {
        return n["method"] == "window/logMessage" &&
               n["params"]["message"].get<std::string>().find("port " + m[1].str() + " on the box closed") != std::string::npos;
      },
      30s, answer);
  BOOST_TEST(closed.has_value());
  BOOST_TEST(!listed());
  BOOST_TEST(ferry::test::tcp_connect("127.0.0.1", local_port) < 0);
  BOOST_REQUIRE(c.call("run/input", {{"id", id}, {"text", ""}, {"eof", true}}, answer).contains("result"));
  BOOST_TEST(c.wait_notification([&](const json& n) { return n["method"] == "run/exited" && n["params"]["id"] == id; }, 60s, answer)
                 .has_value());
  ::unsetenv("FERRY_AGENT");
}
