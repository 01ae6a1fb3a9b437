// ferry alloc on a real Slurm cluster (slurm_fixture: slurmctld, two slurmd, munged) whose login
// node is the sshd fixture: an allocation holds a node and is found again by name; ferry tunnel then
// reaches a server started inside it through an agent in the job (srun carries the agent's stream,
// no sshd on the node), byte for byte for a file bigger than the relay's window; runs go into it as
// steps (at once, status and Ctrl-C as ever, named by ferry runs); Ctrl-C while it pends takes the
// request back; --release ends it; and ferry debug takes a node for its session, a
// real debugpy stops at a breakpoint there, and the node is released at the end.
#define BOOST_TEST_MODULE slurm_allocation
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <sstream>
#include <thread>
#include <regex>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/integration/slurm_project.hpp"
#include "tests/support/breakpoint_scenario.hpp"
#include "tests/support/ferry_process.hpp"
#include "tests/support/loopback_port.hpp"
#include "tests/support/serve_client.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using ferry::test::read_file;
using ferry::test::write_file;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct Ferry : ferry::test::FerryProcess {
  Ferry(const fs::path& cwd, const std::vector<std::string>& args) : FerryProcess(FERRY_BIN, cwd, args) {}
};

// A cluster, its login node, and a project whose ferry.json names both (jobs of 10 minutes).
struct Cluster : ferry::test::SlurmProject {
  Cluster() : SlurmProject("allocproj", {{"partition", "main"}, {"time", "10"}}) {}
};

std::string job_id_in(const std::string& text) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(R"(Slurm job (\d+) submitted)")) ? m[1].str() : "";
}

// GET `path` from 127.0.0.1:port (HTTP/1.0: the server closes when done); the whole response.
std::string http_get(int port, const std::string& path) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
    (void)!::write(fd, request.data(), request.size());
    char buffer[65536];
    for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) response.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return response;
}

std::string body_of(const std::string& response) {
  const auto at = response.find("\r\n\r\n");
  return at == std::string::npos ? "" : response.substr(at + 4);
}

}  // namespace

BOOST_AUTO_TEST_CASE(an_allocation_holds_a_node_that_tunnels_reach_through_an_agent_in_the_job) {
  Cluster c;
  Ferry alloc(c.project.path(), {"alloc"});
  BOOST_TEST_REQUIRE(alloc.wait(120s) == 0, alloc.out() + alloc.err());
  std::smatch m;
  const std::string said = alloc.out();
  BOOST_REQUIRE_MESSAGE(std::regex_search(said, m, std::regex(R"(allocation (\d+) on (n\d))")), said + alloc.err());
  const std::string id = m[1].str();
  BOOST_TEST(c.slurm.job_state(id).state == "RUNNING");
  {
    Ferry status(c.project.path(), {"alloc", "--status"});
    BOOST_TEST(status.wait(60s) == 0, status.err());
    BOOST_TEST(status.out().find("allocation " + id + " on ") != std::string::npos, status.out());
  }

  // A server inside the allocation, serving a small file and one bigger than the relay's window.
  const fs::path site = c.project / "site";
  fs::create_directories(site);
  write_file(site / "hello.txt", "hello from the node\n");
  std::string big(5u << 20, '\0');
  std::mt19937 rng(7);
  for (auto& ch : big) ch = static_cast<char>(rng());
  write_file(site / "big.bin", big);
  const int port = ferry::test::free_loopback_port();
  const auto server = c.slurm.run("cd '" + site.string() + "' && (srun --jobid=" + id + " --overlap -N1 -n1 --job-name=site " +
                                  "python3 -m http.server --bind 127.0.0.1 " + std::to_string(port) + " >server.log 2>&1 &)");
  BOOST_REQUIRE_EQUAL(server.status, 0);
  BOOST_REQUIRE_MESSAGE(ferry::test::eventually([&] { return c.steps(id).find("site") != std::string::npos; }, 30s), c.steps(id));

  Ferry tunnel(c.project.path(), {"tunnel", "0:127.0.0.1:" + std::to_string(port)});
  BOOST_REQUIRE_MESSAGE(tunnel.wait_out("\n", 90s), tunnel.out() + tunnel.err());
  const std::string opened = tunnel.out();
  BOOST_REQUIRE_MESSAGE(std::regex_search(opened, m, std::regex(R"(127\.0\.0\.1:(\d+))")), opened);
  const int local = std::stoi(m[1].str());
  BOOST_TEST(tunnel.err().find("into allocation " + id) != std::string::npos, tunnel.err());
  // The tunnel's agent is a step of the job: the node is reached through Slurm, not through sshd.
  BOOST_TEST(c.steps(id).find("ferry-agent") != std::string::npos, c.steps(id));
  // The server may still be starting: its first answer is awaited, the rest must come at once.
  BOOST_REQUIRE(ferry::test::eventually([&] { return body_of(http_get(local, "/hello.txt")) == "hello from the node\n"; }, 30s));
  BOOST_TEST(body_of(http_get(local, "/big.bin")) == big);
  BOOST_TEST(body_of(http_get(local, "/hello.txt")) == "hello from the node\n");

  tunnel.signal(SIGINT);
  BOOST_TEST(tunnel.wait(60s) == 0, tunnel.err());
  // The agent's step ends with the tunnel: nothing of ferry's is left in the job.
  BOOST_TEST(ferry::test::eventually([&] { return c.steps(id).find("ferry-agent") == std::string::npos; }, 30s), c.steps(id));

  // A tunnel open when the allocation goes says so and ends, rather than forwarding to nothing.
  Ferry again(c.project.path(), {"tunnel", "0:127.0.0.1:" + std::to_string(port)});
  BOOST_REQUIRE_MESSAGE(again.wait_out("\n", 90s), again.out() + again.err());
  Ferry release(c.project.path(), {"alloc", "--release"});
  BOOST_TEST(release.wait(60s) == 0, release.err());
  BOOST_TEST(release.err().find("released allocation " + id) != std::string::npos, release.err());
  BOOST_TEST(again.wait(60s) == 1, again.err());
  BOOST_TEST(again.err().find("is gone (the allocation ended or was released); tunnels closed") != std::string::npos, again.err());
  BOOST_TEST(c.slurm.wait_job(id, 60s).final());
  Ferry none(c.project.path(), {"alloc", "--status"});
  BOOST_TEST(none.wait(60s) == 1, none.out() + none.err());
}

// With an allocation, ferry run starts at once as a step of it (no queue), its status is ferry's,
// Ctrl-C reaches the program on the node, and ferry runs names the allocation.
BOOST_AUTO_TEST_CASE(runs_go_into_the_allocation_as_steps) {
  Cluster c;
  Ferry alloc(c.project.path(), {"alloc"});
  BOOST_TEST_REQUIRE(alloc.wait(120s) == 0, alloc.out() + alloc.err());
  std::smatch m;
  const std::string said = alloc.out();
  BOOST_REQUIRE(std::regex_search(said, m, std::regex(R"(allocation (\d+) on )")));
  const std::string id = m[1].str();
  write_file(c.project / "where.py",
             "import os, sys\nprint('job', os.environ.get('SLURM_JOB_ID'), 'step', os.environ.get('SLURM_STEP_ID'))\nsys.exit(3)\n");
  {
    Ferry run(c.project.path(), {"run", "--", "where.py"});
    BOOST_TEST(run.wait(120s) == 3, run.out() + run.err());
    BOOST_TEST(run.out().find("job " + id + " step ") != std::string::npos, run.out());
    BOOST_TEST(run.err().find("into allocation " + id) != std::string::npos, run.err());
    BOOST_TEST(run.err().find("submitted") == std::string::npos, run.err());  // no job of its own
  }
  write_file(c.project / "wait.py",
             "import signal, sys, time\n"
             "def stop(*_):\n    print('got SIGINT on the node', flush=True)\n    sys.exit(130)\n"
             "signal.signal(signal.SIGINT, stop)\nprint('waiting', flush=True)\ntime.sleep(300)\n");
  {
    Ferry run(c.project.path(), {"run", "--", "wait.py"});
    BOOST_REQUIRE_MESSAGE(run.wait_out("waiting", 60s), run.out() + run.err());
    run.signal(SIGINT);
    BOOST_TEST(run.wait(60s) == 130, run.out() + run.err());
    BOOST_TEST(run.out().find("got SIGINT on the node") != std::string::npos, run.out());
  }
  Ferry runs(c.project.path(), {"runs"});
  BOOST_TEST(runs.wait(60s) == 0, runs.err());
  BOOST_TEST(runs.out().find("[allocation " + id + "] /usr/bin/python3 -u where.py") != std::string::npos, runs.out());
  BOOST_TEST(c.slurm.run("scancel " + id).status == 0);
}

// PyCharm's debug server: --pycharm opens a reverse tunnel from the node's 127.0.0.1:PORT (an agent
// in the job listens there) to the server here, and the command, run on the node, reaches it.
BOOST_AUTO_TEST_CASE(debug_pycharm_reaches_the_debug_server_here_from_a_node) {
  Cluster c;
  // A stand-in for PyCharm's debug server: one connection, a line in, a line out.
  int local_port = 0;
  const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  BOOST_REQUIRE(::bind(server, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(server, 4) == 0);
  socklen_t len = sizeof a;
  ::getsockname(server, reinterpret_cast<sockaddr*>(&a), &len);
  local_port = ntohs(a.sin_port);
  std::string heard;
  std::thread pycharm([&] {
    const int conn = ::accept(server, nullptr, nullptr);
    if (conn < 0) return;
    char ch;
    while (::read(conn, &ch, 1) == 1 && ch != '\n') heard += ch;
    (void)!::write(conn, "hello from pycharm\n", 19);
    ::close(conn);
  });
  const int node_port = ferry::test::free_loopback_port();
  write_file(c.project / "dial.py",
             "import socket, sys\ns = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
             "s.sendall(b'from the node\\n')\nprint(s.makefile().readline().strip())\n");
  Ferry debug(c.project.path(), {"debug", "--pycharm", std::to_string(node_port), "--local-port", std::to_string(local_port),
                                 "--", "dial.py", std::to_string(node_port)});
  const int rc = debug.wait(120s);
  ::shutdown(server, SHUT_RDWR);
  pycharm.join();
  ::close(server);
  BOOST_TEST(rc == 0, debug.out() + debug.err());
  BOOST_TEST(heard == "from the node");
  BOOST_TEST(debug.out().find("hello from pycharm") != std::string::npos, debug.out());
  const std::string id = job_id_in(debug.err());
  BOOST_REQUIRE_MESSAGE(!id.empty(), debug.err());
  BOOST_TEST(debug.err().find("released Slurm job " + id) != std::string::npos, debug.err());
}

#ifdef FERRY_TRAIN_BIN
// ferry train with a two-node allocation held: a step over both nodes (srun starts a rank on each),
// one training of world size 2, started at once (no job of its own).
BOOST_AUTO_TEST_CASE(a_training_runs_over_the_allocations_nodes) {
  Cluster c;
  auto project = nlohmann::json::parse(read_file(c.project / "ferry.json"));
  project["env"]["MASTER_ADDR"] = "127.0.0.1";  // the test's node names do not resolve
  project["env"]["MASTER_PORT"] = std::to_string(ferry::test::free_loopback_port());
  write_file(c.project / "ferry.json", project.dump(2));
  Ferry alloc(c.project.path(), {"alloc", "--nodes", "2"});
  BOOST_TEST_REQUIRE(alloc.wait(120s) == 0, alloc.out() + alloc.err());
  std::smatch m;
  const std::string said = alloc.out();
  BOOST_REQUIRE_MESSAGE(std::regex_search(said, m, std::regex(R"(allocation (\d+) on n\[1-2\])")), said);
  const std::string id = m[1].str();
  const nlohmann::json config{{"model", {{"kind", "mlp"}, {"input_dim", 16}, {"hidden", {32}}, {"output_dim", 4}}},
                              {"data", {{"source", "synthetic"}, {"task", "classification"}, {"samples", 256}, {"workers", 0}}},
                              {"optimizer", {{"kind", "adamw"}, {"lr", 0.003}}},
                              {"batch_size", 32}, {"max_steps", 10}, {"log_every_steps", 5}, {"threads", 1}, {"seed", 7},
                              {"device", "cpu"}, {"output_dir", "out"}};
  write_file(c.project / "tiny.json", config.dump());
  Ferry train(c.project.path(), {"train", "tiny.json", "--nodes", "2", "--json", "--trainer", FERRY_TRAIN_BIN});
  BOOST_TEST(train.wait(240s) == 0, train.out() + train.err());
  BOOST_TEST(train.err().find("into allocation " + id) != std::string::npos, train.err());
  BOOST_TEST(train.err().find("submitted") == std::string::npos, train.err());
  bool two = false;
  std::istringstream lines(train.out());
  for (std::string line; std::getline(lines, line);) {
    const auto e = nlohmann::json::parse(line, nullptr, false);
    if (e.is_object() && e.value("event", "") == "start") two = e.value("world_size", 0) == 2;
  }
  BOOST_TEST(two, train.out());
  BOOST_TEST(c.slurm.run("scancel " + id).status == 0);
}
#endif

BOOST_AUTO_TEST_CASE(ctrl_c_while_an_allocation_pends_takes_it_back) {
  Cluster c;
  const std::string holder = c.slurm.submit("-p main -N2 --exclusive --wrap 'sleep 300'");
  Ferry alloc(c.project.path(), {"alloc"});
  BOOST_REQUIRE_MESSAGE(alloc.wait_out("pending (Resources)", 60s, true), alloc.err());
  const std::string id = job_id_in(alloc.err());
  BOOST_REQUIRE(!id.empty());
  alloc.signal(SIGINT);
  BOOST_TEST(alloc.wait(60s) == 130, alloc.err());
  BOOST_TEST(c.slurm.wait_job(id, 60s).state.starts_with("CANCELLED"));
  BOOST_TEST(c.slurm.run("scancel " + holder).status == 0);
}

BOOST_AUTO_TEST_CASE(ferry_debug_stops_at_a_breakpoint_on_a_compute_node) {
  Cluster c;
  fs::create_directories(c.project / "debug");
  fs::copy_file(fs::path(FERRY_SAMPLES_DIR) / "debug" / "loop.py", c.project / "debug" / "loop.py");
  const fs::path local_script = c.project / "debug" / "loop.py";
  const int line = ferry::test::line_of(local_script, "ferry-test: breakpoint");
  BOOST_REQUIRE_GT(line, 0);
  const int port = ferry::test::free_loopback_port();
  Ferry debug(c.project.path(), {"debug", "--port", std::to_string(port), "--local-port", "0", "--", "debug/loop.py", "5"});
  BOOST_REQUIRE_MESSAGE(debug.wait_out("\n}\n", 120s), debug.out() + debug.err());
  const std::string id = job_id_in(debug.err());
  BOOST_REQUIRE_MESSAGE(!id.empty(), debug.err());
  BOOST_TEST(debug.err().find("debugging in allocation " + id + " on n") != std::string::npos, debug.err());
  const std::string out = debug.out();
  const auto config = nlohmann::json::parse(out.substr(0, out.find("\n}\n") + 2), nullptr, false);
  BOOST_REQUIRE_MESSAGE(config.is_object(), out);
  const int local_port = config["connect"]["port"].get<int>();
  std::vector<ferry::test::PathMapping> mappings;
  for (const auto& mp : config["pathMappings"]) mappings.push_back({mp["localRoot"], mp["remoteRoot"]});
  // The debuggee is a step of the job (a run of the login node's agent: ferry runs lists it), and
  // the tunnel to it goes through another, the agent in the job.
  BOOST_TEST(c.steps(id).find("ferry-run") != std::string::npos, c.steps(id));
  BOOST_TEST(c.steps(id).find("ferry-agent") != std::string::npos, c.steps(id));
  auto seen = ferry::test::run_breakpoint_scenario(local_port, local_script, line, mappings);
  BOOST_REQUIRE_MESSAGE(seen.has_value(), (seen ? std::string() : seen.error()) + "\nferry stderr:\n" + debug.err());
  BOOST_TEST(seen->stopped_reason == "breakpoint");
  BOOST_TEST(seen->stopped_line == line);
  BOOST_TEST(fs::path(seen->stopped_path) == local_script);
  BOOST_TEST(seen->first_n == "5");
  BOOST_TEST(debug.wait(60s) == 0, debug.err());
  BOOST_TEST(debug.out().find("sum of squares below 5: 30") != std::string::npos, debug.out());
  // The node was taken for this session only.
  BOOST_TEST(debug.err().find("released Slurm job " + id) != std::string::npos, debug.err());
  BOOST_TEST(c.slurm.wait_job(id, 60s).final());
}

// The editor (ferry serve, stock LSP client): debug/prepare on a Slurm project takes a node for the
// session, saying so in its progress, stops at a breakpoint there, and releases the node once the
// debuggee has ended; with `ferry alloc`'s allocation, run/start runs in it as a step, tunnel/open
// reaches a server on its node, and gpu/status shows the allocation and its time left, with a
// warning when little is left.
BOOST_AUTO_TEST_CASE(the_editor_debugs_and_runs_on_a_node) {
  Cluster c;
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);  // the server in this process finds no agent beside it
  fs::create_directories(c.project / "debug");
  fs::copy_file(fs::path(FERRY_SAMPLES_DIR) / "debug" / "loop.py", c.project / "debug" / "loop.py");
  const fs::path local_script = c.project / "debug" / "loop.py";
  const int line = ferry::test::line_of(local_script, "ferry-test: breakpoint");
  write_file(c.project / "where.py", "import os\nprint('job', os.environ.get('SLURM_JOB_ID'))\n");
  ferry::test::ServeClient client(c.project.path());
  BOOST_REQUIRE(client.call("sync/push", nlohmann::json::object()).contains("result"));

  auto prepared = client.call("debug/prepare",
                              {{"command", {"debug/loop.py", "5"}}, {"port", ferry::test::free_loopback_port()}, {"localPort", 0},
                               {"workDoneToken", "dbg"}},
                              {}, 120s);
  BOOST_REQUIRE_MESSAGE(prepared.contains("result"), prepared.dump());
  std::string said;
  for (const auto& n : client.notifications)
    if (n["method"] == "$/progress" && n["params"]["token"] == "dbg") said += n["params"]["value"].value("message", "") + "\n";
  std::smatch m;
  BOOST_REQUIRE_MESSAGE(std::regex_search(said, m, std::regex(R"(Slurm job (\d+) submitted \(a node for this debug session\))")), said);
  const std::string session_job = m[1].str();
  const auto& result = prepared["result"];
  std::vector<ferry::test::PathMapping> mappings;
  for (const auto& mp : result["configuration"]["pathMappings"]) mappings.push_back({mp["localRoot"], mp["remoteRoot"]});
  auto seen = ferry::test::run_breakpoint_scenario(result["localPort"].get<int>(), local_script, line, mappings);
  BOOST_REQUIRE_MESSAGE(seen.has_value(), (seen ? std::string() : seen.error()));
  BOOST_TEST(seen->stopped_line == line);
  BOOST_TEST(seen->first_n == "5");
  // The debuggee ended: its node goes back to the cluster without another request.
  BOOST_TEST(c.slurm.wait_job(session_job, 60s).final(), c.slurm.job_state(session_job).state);

  Ferry alloc(c.project.path(), {"alloc"});
  BOOST_TEST_REQUIRE(alloc.wait(120s) == 0, alloc.out() + alloc.err());
  const std::string allocated = alloc.out();
  BOOST_REQUIRE(std::regex_search(allocated, m, std::regex(R"(allocation (\d+) on )")));
  const std::string id = m[1].str();
  auto started = client.call("run/start", {{"argv", {"where.py"}}});
  BOOST_REQUIRE_MESSAGE(started.contains("result"), started.dump());
  const std::string run_id = started["result"]["id"];
  auto exited = client.wait_notification(
      [&](const nlohmann::json& n) { return n["method"] == "run/exited" && n["params"]["id"] == run_id; }, 120s);
  ::unsetenv("FERRY_AGENT");
  BOOST_REQUIRE(exited);
  std::string out;
  for (const auto& n : client.notifications)
    if (n["method"] == "run/output" && n["params"]["id"] == run_id && n["params"]["stream"] == "stdout") out += n["params"].value("text", "");
  BOOST_TEST(out == "job " + id + "\n", out);
  // The editor's tunnels go to the allocation's node (through the agent in the job), with ids of
  // their own, listed and closed like the login node's.
  write_file(c.project / "site" / "hello.txt", "hello from the node\n");
  const int site_port = ferry::test::free_loopback_port();
  const auto site = c.slurm.run("cd '" + (c.project / "site").string() + "' && (srun --jobid=" + id + " --overlap -N1 -n1 --job-name=site " +
                                "python3 -m http.server --bind 127.0.0.1 " + std::to_string(site_port) + " >server.log 2>&1 &)");
  BOOST_REQUIRE_EQUAL(site.status, 0);
  auto opened = client.call("tunnel/open", {{"remotePort", site_port}, {"localPort", 0}});
  BOOST_REQUIRE_MESSAGE(opened.contains("result"), opened.dump());
  const int tunnel_id = opened["result"]["id"];
  const int tunnel_port = opened["result"]["localPort"];
  BOOST_TEST(tunnel_id >= 1'000'001);
  BOOST_TEST(opened["result"].value("description", "").find("Slurm job " + id) != std::string::npos, opened.dump());
  BOOST_TEST(ferry::test::eventually([&] { return body_of(http_get(tunnel_port, "/hello.txt")) == "hello from the node\n"; }, 30s));
  auto listed = client.call("tunnel/list", nlohmann::json::object());
  bool listed_it = false;
  for (const auto& t : listed["result"]["tunnels"]) listed_it = listed_it || t["id"] == tunnel_id;
  BOOST_TEST(listed_it, listed.dump());
  BOOST_TEST(client.call("tunnel/close", {{"id", tunnel_id}}).contains("result"));

  // Where a cloud host's price shows: the allocation and its time left; under 10 minutes left
  // (ferry.json's time is 10), a warning once.
  auto status = client.call("gpu/status", nlohmann::json::object());
  BOOST_REQUIRE_MESSAGE(status.contains("result"), status.dump());
  const auto& held = status["result"]["slurm"]["allocation"];
  BOOST_TEST(held.value("jobId", "") == id, status.dump());
  BOOST_TEST(held.value("state", "") == "RUNNING");
  const long left = held.value("secondsLeft", -1L);
  BOOST_TEST((left > 0 && left <= 600), left);
  // The warning comes from a gpu/status that finds under 10 minutes left: asked again while the
  // countdown may still read exactly 10:00 (the job started this second).
  std::optional<nlohmann::json> warned;
  for (int ask = 0; ask < 15 && !warned; ++ask) {
    if (ask > 0) BOOST_REQUIRE(client.call("gpu/status", nlohmann::json::object()).contains("result"));
    warned = client.wait_notification(
        [](const nlohmann::json& n) {
          return n["method"] == "window/showMessage" && n["params"].value("message", "").find("ends in") != std::string::npos;
        },
        1s);
  }
  BOOST_REQUIRE(warned);
  BOOST_TEST((*warned)["params"]["message"].get<std::string>().find("allocation " + id) != std::string::npos, warned->dump());
  BOOST_TEST(c.slurm.run("scancel " + id).status == 0);
}

// ferry.json's tunnels in the editor follow the allocation on the same local port: on the login
// node while there is none, to the node once `ferry alloc` holds one (Slurm asked every 30 s), and
// back to the login node at once when it is released.
BOOST_AUTO_TEST_CASE(ferry_json_tunnels_follow_the_allocation) {
  Cluster c;
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);  // the server in this process finds no agent beside it
  const int site_port = ferry::test::free_loopback_port();
  const int local_port = ferry::test::free_loopback_port();
  auto config = nlohmann::json::parse(read_file(c.project / "ferry.json"));
  config["tunnels"] = {{{"name", "site"}, {"localPort", local_port}, {"remotePort", site_port}}};
  write_file(c.project / "ferry.json", config.dump(2));
  ferry::test::ServeClient client(c.project.path());
  // The one tunnel listed, and whether it is on a node: its description then names the job.
  auto where = [&]() -> std::string {
    auto listed = client.call("tunnel/list", nlohmann::json::object());
    const auto& tunnels = listed["result"]["tunnels"];
    if (tunnels.size() != 1 || tunnels[0].value("localPort", 0) != local_port) return "";
    const std::string d = tunnels[0].value("description", "");
    return d.find("Slurm job") != std::string::npos ? d : "login";
  };
  BOOST_REQUIRE(client.call("host/connect", nlohmann::json::object(), {}, 60s).contains("result"));
  BOOST_REQUIRE_MESSAGE(ferry::test::eventually([&] { return where() == "login"; }, 30s), where());

  Ferry alloc(c.project.path(), {"alloc"});
  BOOST_TEST_REQUIRE(alloc.wait(120s) == 0, alloc.out() + alloc.err());
  std::smatch m;
  const std::string allocated = alloc.out();
  BOOST_REQUIRE(std::regex_search(allocated, m, std::regex(R"(allocation (\d+) on )")));
  const std::string id = m[1].str();
  write_file(c.project / "site" / "hello.txt", "hello from the node\n");
  BOOST_REQUIRE_EQUAL(c.slurm.run("cd '" + (c.project / "site").string() + "' && (srun --jobid=" + id +
                                  " --overlap -N1 -n1 --job-name=site python3 -m http.server --bind 127.0.0.1 " +
                                  std::to_string(site_port) + " >server.log 2>&1 &)")
                          .status,
                      0);
  BOOST_REQUIRE_MESSAGE(ferry::test::eventually([&] { return where().find("Slurm job " + id) != std::string::npos; }, 45s), where());
  BOOST_TEST(c.steps(id).find("ferry-agent") != std::string::npos, c.steps(id));
  BOOST_TEST(ferry::test::eventually([&] { return body_of(http_get(local_port, "/hello.txt")) == "hello from the node\n"; }, 30s));

  Ferry release(c.project.path(), {"alloc", "--release"});
  BOOST_TEST(release.wait(60s) == 0, release.err());
  ::unsetenv("FERRY_AGENT");
  BOOST_TEST(ferry::test::eventually([&] { return where() == "login"; }, 15s), where());
}
