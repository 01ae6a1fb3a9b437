// `ferry debug` end to end over a real sshd: the script runs on the "box" (the fixture's home)
// under the real debugpy, ferry's tunnel carries the DAP, and a DAP client here sets a
// breakpoint on the *local* copy of the script (pathMappings from ferry's configuration), stops
// at the right line, reads locals, continues, and ferry exits with the script's status 0.
#define BOOST_TEST_MODULE debug_ssh
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "helper/remote/child_process.hpp"
#include "protocol/framing.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/serve_process.hpp"
#include "tests/support/breakpoint_scenario.hpp"
#include "tests/support/loopback_port.hpp"
#include "tests/support/wait_for.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ferry::remote::ChildProcess;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

const fs::path kSample = fs::path(FERRY_SAMPLES_DIR) / "debug" / "loop.py";

// A project whose host is the fixture: debug/loop.py locally, "~/proj" on the box.
fs::path make_project(const ferry::test::SshdFixture& f, const std::string& interpreter) {
  const fs::path project = f.dir() / "project";
  fs::create_directories(project / "debug");
  fs::copy_file(kSample, project / "debug" / "loop.py", fs::copy_options::overwrite_existing);
  std::ofstream(project / "ferry.json") << json{{"name", "dbg"},
                                                {"host", f.alias()},
                                                {"sshConfig", f.ssh_config().string()},
                                                {"interpreter", interpreter},
                                                {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}}
                                               .dump();
  return project;
}

// ferry with stdout on a pipe we read incrementally and stderr in a file (for failure messages).
struct FerryProcess {
  ChildProcess child;
  int out = -1;
  std::string stdout_text;
  fs::path stderr_file;

  FerryProcess(const std::vector<std::string>& args, const fs::path& stderr_path) : stderr_file(stderr_path) {
    // ChildProcess inherits stderr: point ours at the file around the spawn.
    const int saved = ::dup(2);
    const int err = ::open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ::dup2(err, 2);
    std::vector<std::string> argv{FERRY_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    auto spawned = child.spawn(argv);
    ::dup2(saved, 2);
    ::close(saved);
    ::close(err);
    BOOST_REQUIRE_MESSAGE(spawned.has_value(), (spawned ? std::string() : spawned.error()));
    ::close(spawned->stdin_fd);
    out = spawned->stdout_fd;
  }
  ~FerryProcess() {
    if (out >= 0) ::close(out);
  }
  std::string stderr_text() const {
    std::ifstream in(stderr_file);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Reads stdout until `done(stdout_text)` or EOF or the deadline; true when done held.
  template <class Done>
  bool read_until(Done done, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!done(stdout_text)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0 || out < 0) return false;
      pollfd p{out, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char buffer[4096];
      ssize_t n = ::read(out, buffer, sizeof buffer);
      if (n <= 0) {
        ::close(out);
        out = -1;
        return done(stdout_text);
      }
      stdout_text.append(buffer, static_cast<std::size_t>(n));
    }
    return true;
  }
};

// The attach configuration is the first thing on stdout: a pretty-printed object ending "}\n".
std::optional<json> configuration_in(const std::string& text) {
  const auto end = text.find("\n}\n");
  if (text.empty() || text[0] != '{' || end == std::string::npos) return std::nullopt;
  return json::parse(text.substr(0, end + 2), nullptr, false);
}

}  // namespace

BOOST_AUTO_TEST_CASE(breakpoint_through_ferry_tunnel_with_path_mappings) {
  ferry::test::SshdFixture f;
  f.trust_host_key();
  const fs::path project = make_project(f, "/usr/bin/python3");
  const fs::path local_script = project / "debug" / "loop.py";
  const int line = ferry::test::line_of(local_script, "ferry-test: breakpoint");
  BOOST_REQUIRE_GT(line, 0);
  const int remote_port = ferry::test::free_loopback_port();
  fs::create_directories(project / ".vscode");
  std::ofstream(project / ".vscode" / "launch.json")
      << R"({"version": "0.2.0", "configurations": [{"name": "mine", "type": "node", "request": "launch"}]})";

  FerryProcess ferry({"--project", project.string(), "debug", "--port", std::to_string(remote_port), "--local-port",
                      "0", "--write-launch-json", "--", "debug/loop.py", "5"},
                     f.dir() / "ferry-debug.stderr");
  const bool got_config = ferry.read_until([](const std::string& s) { return configuration_in(s).has_value(); }, 90s);
  BOOST_REQUIRE_MESSAGE(got_config, "no configuration from ferry debug; stdout:\n" + ferry.stdout_text + "\nstderr:\n" +
                                        ferry.stderr_text());
  const json config = *configuration_in(ferry.stdout_text);
  BOOST_TEST(config["type"] == "debugpy");
  BOOST_TEST(config["request"] == "attach");
  BOOST_TEST(config["connect"]["host"] == "127.0.0.1");
  const int local_port = config["connect"]["port"].get<int>();
  BOOST_TEST(local_port != remote_port);  // --local-port 0: the tunnel's own port, not debugpy's
  BOOST_REQUIRE_EQUAL(config["pathMappings"].size(), 1u);
  BOOST_TEST(config["pathMappings"][0]["localRoot"] == fs::weakly_canonical(project).string());
  BOOST_TEST(config["pathMappings"][0]["remoteRoot"] == (f.home() / "proj").string());

  // --write-launch-json: the same entry merged beside the user's own, local roots workspace-relative.
  {
    std::ifstream in(project / ".vscode" / "launch.json");
    const auto launch = json::parse(in, nullptr, false);
    BOOST_REQUIRE_MESSAGE(launch.is_object(), ferry.stderr_text());
    BOOST_REQUIRE_EQUAL(launch["configurations"].size(), 2u);
    BOOST_TEST(launch["configurations"][0]["name"] == "mine");
    BOOST_TEST(launch["configurations"][1]["name"] == config["name"]);
    BOOST_TEST(launch["configurations"][1]["connect"]["port"] == local_port);
    BOOST_TEST(launch["configurations"][1]["pathMappings"][0]["localRoot"] == "${workspaceFolder}");
  }

  std::vector<ferry::test::PathMapping> mappings;
  for (const auto& m : config["pathMappings"]) mappings.push_back({m["localRoot"], m["remoteRoot"]});
  auto seen = ferry::test::run_breakpoint_scenario(local_port, local_script, line, mappings);
  BOOST_REQUIRE_MESSAGE(seen.has_value(), (seen ? std::string() : seen.error()) + "\nferry stderr:\n" + ferry.stderr_text());
  BOOST_TEST(seen->stopped_reason == "breakpoint");
  BOOST_TEST(seen->stopped_line == line);
  BOOST_TEST(fs::path(seen->stopped_path) == local_script);  // mapped back from ~/proj/debug/loop.py
  BOOST_TEST(seen->first_i == "0");
  BOOST_TEST(seen->first_n == "5");
  BOOST_TEST(seen->second_i == "1");
  BOOST_TEST(seen->terminated);

  ferry.read_until([](const std::string&) { return false; }, 30s);  // to EOF
  auto status = ferry.child.wait_for(30s);
  BOOST_REQUIRE(status);
  BOOST_TEST(WIFEXITED(*status));
  BOOST_TEST(WEXITSTATUS(*status) == 0, ferry.stderr_text());
  BOOST_TEST(ferry.stdout_text.find("sum of squares below 5: 30") != std::string::npos, ferry.stdout_text);
  // The script really ran from the synced copy on the box.
  BOOST_TEST(fs::exists(f.home() / "proj" / "debug" / "loop.py"));
}

// With the project's daemon linked (a `ferry sync` left it), `ferry debug` rides its link: the
// debuggee's run, the tunnel to debugpy and the output, with no SSH login of its own.
BOOST_AUTO_TEST_CASE(the_breakpoint_riding_the_daemon) {
  ferry::test::SshdOptions logins;
  logins.log_level = "INFO";  // "Accepted publickey for ..." per login
  ferry::test::SshdFixture f(logins);
  f.trust_host_key();
  const fs::path project = make_project(f, "/usr/bin/python3");
  const fs::path local_script = project / "debug" / "loop.py";
  const int line = ferry::test::line_of(local_script, "ferry-test: breakpoint");
  ::unsetenv("FERRY_NO_DAEMON");
  const std::string ferry_in = "'" FERRY_BIN "' --project '" + project.string() + "' ";
  ferry::test::run_command(ferry_in + "sync >/dev/null 2>&1");
  const auto deadline = Clock::now() + 60s;
  while (ferry::test::run_command(ferry_in + "daemon status --json || true").find("\"linked\":true") == std::string::npos) {
    BOOST_REQUIRE_MESSAGE(Clock::now() < deadline, "no daemon linked after the first sync");
    std::this_thread::sleep_for(20ms);
  }
  const int before = f.accepted_logins();
  FerryProcess ferry({"--project", project.string(), "debug", "--port", std::to_string(ferry::test::free_loopback_port()),
                      "--local-port", "0", "--", "debug/loop.py", "5"},
                     f.dir() / "ferry-debug-riding.stderr");
  BOOST_REQUIRE_MESSAGE(ferry.read_until([](const std::string& s) { return configuration_in(s).has_value(); }, 90s),
                        "no configuration; stderr:\n" + ferry.stderr_text());
  const json config = *configuration_in(ferry.stdout_text);
  std::vector<ferry::test::PathMapping> mappings;
  for (const auto& m : config["pathMappings"]) mappings.push_back({m["localRoot"], m["remoteRoot"]});
  auto seen = ferry::test::run_breakpoint_scenario(config["connect"]["port"].get<int>(), local_script, line, mappings);
  BOOST_REQUIRE_MESSAGE(seen.has_value(), (seen ? std::string() : seen.error()) + "\nferry stderr:\n" + ferry.stderr_text());
  BOOST_TEST(seen->stopped_line == line);
  BOOST_TEST(seen->terminated);
  ferry.read_until([](const std::string&) { return false; }, 30s);  // to EOF
  auto status = ferry.child.wait_for(30s);
  BOOST_REQUIRE(status);
  BOOST_TEST(WEXITSTATUS(*status) == 0, ferry.stderr_text());
  BOOST_TEST(ferry.stdout_text.find("sum of squares below 5: 30") != std::string::npos, ferry.stdout_text);
  BOOST_TEST(ferry.stderr_text().find("connecting to") == std::string::npos, ferry.stderr_text());  // no link of its own
  BOOST_TEST(f.accepted_logins() == before, f.log());
  ferry::test::run_command(ferry_in + "daemon stop >/dev/null 2>&1");
}

BOOST_AUTO_TEST_CASE(missing_debugpy_says_how_to_install_it) {
  ferry::test::SshdFixture f;
  f.trust_host_key();
  // -S -I: no site-packages, so the system's python3-debugpy is out of reach.
  const fs::path project = make_project(f, "/usr/bin/python3 -S -I");
  FerryProcess ferry({"--project", project.string(), "debug", "--", "debug/loop.py"}, f.dir() / "ferry-debug.stderr");
  ferry.read_until([](const std::string&) { return false; }, 60s);
  auto status = ferry.child.wait_for(30s);
  BOOST_REQUIRE(status);
  BOOST_TEST(WEXITSTATUS(*status) == 3);
  const auto err = ferry.stderr_text();
  BOOST_TEST(err.find("debugpy is not importable") != std::string::npos, err);
  BOOST_TEST(err.find("/usr/bin/python3 -S -I -m pip install debugpy") != std::string::npos, err);
  BOOST_TEST(err.find("sudo apt install python3-debugpy") != std::string::npos, err);
  BOOST_TEST(ferry.stdout_text.empty(), ferry.stdout_text);
}

// `ferry serve` over pipes (tests/support/serve_process.hpp), started for `project`.
struct ServeProcess : ferry::test::ServeProcess {
  explicit ServeProcess(const fs::path& project) : ferry::test::ServeProcess({FERRY_BIN, "--project", project.string(), "serve"}) {}
  void send(const json& message) { BOOST_REQUIRE(ferry::test::ServeProcess::send(message)); }
};

BOOST_AUTO_TEST_CASE(debug_prepare_from_an_ide) {
  ferry::test::SshdFixture f;
  f.trust_host_key();
  const fs::path project = make_project(f, "/usr/bin/python3");
  const fs::path local_script = project / "debug" / "loop.py";
  const int line = ferry::test::line_of(local_script, "ferry-test: breakpoint");
  // debug/prepare does not push (the IDE calls sync/flush first): put the script on the box.
  fs::create_directories(f.home() / "proj" / "debug");
  fs::copy_file(local_script, f.home() / "proj" / "debug" / "loop.py", fs::copy_options::overwrite_existing);

  ServeProcess serve(project);
  serve.send({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", {{"capabilities", json::object()}}}});
  auto init = serve.response(1, 30s);
  BOOST_REQUIRE(init);
  const auto& methods = (*init)["result"]["capabilities"]["experimental"]["methods"];
  BOOST_TEST((std::find(methods.begin(), methods.end(), "debug/prepare") != methods.end()));
  serve.send({{"jsonrpc", "2.0"}, {"method", "initialized"}, {"params", json::object()}});

  serve.send({{"jsonrpc", "2.0"}, {"id", 2}, {"method", "debug/prepare"}, {"params", {{"port", 5678}}}});
  auto bad = serve.response(2, 30s);
  BOOST_REQUIRE(bad);
  BOOST_TEST((*bad)["error"]["code"] == -32602, bad->dump());
  BOOST_TEST((*bad)["error"]["message"].get<std::string>().find("/command") != std::string::npos, bad->dump());

  const int remote_port = ferry::test::free_loopback_port();
  serve.send({{"jsonrpc", "2.0"},
              {"id", 3},
              {"method", "debug/prepare"},
              {"params", {{"command", {"debug/loop.py", "5"}}, {"port", remote_port}, {"localPort", 0}}}});
  auto prepared = serve.response(3, 90s);
  BOOST_REQUIRE(prepared);
  BOOST_REQUIRE_MESSAGE(prepared->contains("result"), prepared->dump());
  const json& result = (*prepared)["result"];
  const int local_port = result["localPort"].get<int>();
  BOOST_TEST(result["configuration"]["connect"]["port"] == local_port);
  BOOST_TEST(result["configuration"]["pathMappings"][0]["remoteRoot"] == (f.home() / "proj").string());
  const std::string run_id = result["runId"];
  BOOST_TEST(!run_id.empty());

  std::vector<ferry::test::PathMapping> mappings;
  for (const auto& m : result["configuration"]["pathMappings"]) mappings.push_back({m["localRoot"], m["remoteRoot"]});
  auto seen = ferry::test::run_breakpoint_scenario(local_port, local_script, line, mappings);
  BOOST_REQUIRE_MESSAGE(seen.has_value(), (seen ? std::string() : seen.error()));
  BOOST_TEST(seen->stopped_line == line);
  BOOST_TEST(seen->first_i == "0");

  // The run's own record on the box: exit 0 (exit.json is written once the script has ended).
  const fs::path exit_json = f.home() / ".cache" / "ferry" / "state" / "runs" / run_id / "exit.json";
  BOOST_REQUIRE_MESSAGE(ferry::test::eventually([&] { return fs::exists(exit_json); }, 20s), exit_json.string());
  std::ifstream in(exit_json);
  const auto status = json::parse(in, nullptr, false);
  BOOST_TEST(status.value("exitCode", -1) == 0, status.dump());

  serve.send({{"jsonrpc", "2.0"}, {"id", 4}, {"method", "shutdown"}});
  BOOST_TEST(serve.response(4, 30s).has_value());
  serve.send({{"jsonrpc", "2.0"}, {"method", "exit"}});
  auto exited = serve.child.wait_for(30s);
  BOOST_REQUIRE(exited);
  BOOST_TEST(WEXITSTATUS(*exited) == 0);
}

BOOST_AUTO_TEST_CASE(pycharm_reverse_tunnel_reaches_the_ide) {
  ferry::test::SshdFixture f;
  f.trust_host_key();
  const fs::path project = make_project(f, "/usr/bin/python3");
  // The stand-in for PyCharm's debug server: a listener here.
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  BOOST_REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  BOOST_REQUIRE(::listen(listener, 4) == 0);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const int local_port = ntohs(addr.sin_port);
  const int remote_port = ferry::test::free_loopback_port();  // same machine: must differ from local_port

  // What pydevd_pycharm.settrace does, reduced to its first step: connect to localhost:PORT on the box.
  const std::string code = "import socket; s = socket.create_connection(('127.0.0.1', " + std::to_string(remote_port) +
                           ")); s.sendall(b'hello from the box'); s.close()";
  FerryProcess ferry({"--project", project.string(), "debug", "--pycharm", std::to_string(remote_port), "--local-port",
                      std::to_string(local_port), "--", "-c", code},
                     f.dir() / "ferry-pycharm.stderr");

  pollfd p{listener, POLLIN, 0};
  BOOST_REQUIRE_MESSAGE(::poll(&p, 1, 60'000) == 1, "nothing came through the reverse tunnel\n" + ferry.stderr_text());
  int conn = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  BOOST_REQUIRE(conn >= 0);
  std::string got;
  for (;;) {
    pollfd c{conn, POLLIN, 0};
    if (::poll(&c, 1, 30'000) != 1) break;
    char buffer[256];
    ssize_t n = ::read(conn, buffer, sizeof buffer);
    if (n <= 0) break;
    got.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(conn);
  ::close(listener);
  BOOST_TEST(got == "hello from the box");

  ferry.read_until([](const std::string&) { return false; }, 30s);
  auto status = ferry.child.wait_for(30s);
  BOOST_REQUIRE(status);
  BOOST_TEST(WEXITSTATUS(*status) == 0, ferry.stderr_text());
  BOOST_TEST(ferry.stdout_text.find("import pydevd_pycharm; pydevd_pycharm.settrace('localhost', port=" +
                                    std::to_string(remote_port) + ", stdoutToServer=True") != std::string::npos,
             ferry.stdout_text);
}
