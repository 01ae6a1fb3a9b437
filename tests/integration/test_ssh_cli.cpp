// `ferry trust`, `ferry connect` and `ferry doctor` as real processes against a real sshd: the
// unknown host is refused with its fingerprint, trust records it, connect installs the agent,
// doctor reports every check as JSON, -F works before and after the sub-command.
#define BOOST_TEST_MODULE ssh_cli
#include <boost/test/unit_test.hpp>

#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/serve_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using ferry::test::SshdFixture;
namespace fs = std::filesystem;

namespace {

// Runs ferry with stdin closed and no terminal, so nothing can prompt; stderr joins stdout.
ferry::test::ShellRun run_ferry(const std::string& args, const fs::path& cwd) {
  return ferry::test::run_shell("cd '" + cwd.string() + "' && '" FERRY_BIN "' " + args + " </dev/null 2>&1");
}

}  // namespace

BOOST_AUTO_TEST_CASE(trust_connect_doctor) {
  SshdFixture f;
  fs::path cwd = f.dir();
  std::string F = "-F '" + f.ssh_config().string() + "'";

  auto refused = run_ferry(F + " connect " + f.alias() + " --root '~/proj'", cwd);
  BOOST_TEST(refused.status == 1);
  BOOST_TEST(refused.out.find(f.host_key_fingerprint()) != std::string::npos, refused.out);
  BOOST_TEST(refused.out.find("ferry trust") != std::string::npos);

  auto wrong = run_ferry("trust " + f.alias() + " " + F + " --fingerprint SHA256:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", cwd);
  BOOST_TEST(wrong.status == 1);
  BOOST_TEST(wrong.out.find("not the expected") != std::string::npos, wrong.out);

  auto trusted = run_ferry("trust " + f.alias() + " " + F + " --fingerprint " + f.host_key_fingerprint(), cwd);
  BOOST_TEST(trusted.status == 0, trusted.out);
  BOOST_TEST(trusted.out.find("Trusted [127.0.0.1]:" + std::to_string(f.port())) != std::string::npos, trusted.out);
  auto again = run_ferry(F + " trust " + f.alias(), cwd);
  BOOST_TEST(again.out.find("already trusted") != std::string::npos, again.out);

  // A key the box does not know: the failure names the keys tried and what to do (issue #17's sweep).
  const fs::path stranger = f.dir() / "stranger_ed25519";
  ferry::test::run_command("ssh-keygen -q -t ed25519 -N '' -C stranger -f '" + stranger.string() + "'");
  f.add_client_config("Host stranger\n  HostName 127.0.0.1\n  Port " + std::to_string(f.port()) + "\n  User " +
                      ::getpwuid(::getuid())->pw_name + "\n  IdentityFile " + stranger.string() +
                      "\n  IdentitiesOnly yes\n  UserKnownHostsFile " + f.known_hosts().string() +
                      "\n  GlobalKnownHostsFile none\n");
  auto denied = run_ferry(F + " connect stranger --root '~/proj'", cwd);
  BOOST_TEST(denied.status == 1);
  BOOST_TEST(denied.out.find("ferry connect: cannot reach ssh ") != std::string::npos, denied.out);
  BOOST_TEST(denied.out.find(stranger.string()) != std::string::npos, denied.out);
  BOOST_TEST(denied.out.find("add your public key to ~/.ssh/authorized_keys on the box, or load it into ssh-agent") !=
                 std::string::npos, denied.out);
  BOOST_TEST(denied.out.find("`ferry doctor` checks each step") != std::string::npos, denied.out);

  auto connected = run_ferry(F + " connect " + f.alias() + " --root '~/proj' --json", cwd);
  BOOST_REQUIRE_MESSAGE(connected.status == 0, connected.out);
  auto j = nlohmann::json::parse(connected.out.substr(connected.out.find('{')));
  BOOST_TEST(j["ok"] == true);
  BOOST_TEST(j["agent"]["installed"] == true);
  BOOST_TEST(j["root"] == (f.home() / "proj").string());
  BOOST_TEST(j["hostKey"]["fingerprint"] == f.host_key_fingerprint());

  // A project whose host is the alias: HOST and the root come from ferry.json.
  std::ofstream(cwd / "ferry.json") << nlohmann::json{{"host", f.alias()},
                                                      {"sshConfig", f.ssh_config().string()},
                                                      {"mappings", {{{"local", "."}, {"remote", "~/from-project"}}}}}
                                           .dump();
  auto from_project = run_ferry("connect", cwd);
  BOOST_TEST(from_project.status == 0, from_project.out);
  BOOST_TEST(from_project.out.find((f.home() / "from-project").string()) != std::string::npos, from_project.out);

  auto doctor = run_ferry(F + " doctor " + f.alias() + " --json", cwd);
  auto d = nlohmann::json::parse(doctor.out.substr(doctor.out.find('{')));
  std::map<std::string, std::string> status;
  for (const auto& c : d["checks"]) status[c["check"]] = c["status"];
  BOOST_TEST(status["connection"] == "pass", doctor.out);
  BOOST_TEST(status["host key"] == "pass");
  BOOST_TEST(status["agent"] == "pass");
  BOOST_TEST(status["system"] == "pass");
  BOOST_TEST(status.count("disk") == 1u);
  BOOST_TEST(status.count("nvidia") == 1u);  // warn here: no GPU on the test machine
  BOOST_TEST(status.count("torch") == 1u);
  BOOST_TEST(status.count("sshd PasswordAuthentication") == 1u);
  BOOST_TEST(status.count("firewall") == 1u);
  for (const auto& c : d["checks"])
    if (c["status"] != "pass") BOOST_TEST(c.contains("fix"), c.dump());
  // doctor on an unknown host: the connection line fails with the fix.
  SshdFixture other;
  auto unknown = run_ferry("-F '" + other.ssh_config().string() + "' doctor " + other.alias(), cwd);
  BOOST_TEST(unknown.status == 1);
  BOOST_TEST(unknown.out.find("[FAIL] connection") != std::string::npos, unknown.out);
  BOOST_TEST(unknown.out.find("fix: verify the fingerprint") != std::string::npos, unknown.out);
}

// -F, --project and --log-level work after every sub-command's name too (they were refused with
// exit 109 by run and tunnel), and `ferry -F FILE serve` resolves an alias only FILE defines.
BOOST_AUTO_TEST_CASE(global_options_after_the_sub_command_and_serve_honours_F) {
  SshdFixture f;
  f.trust_host_key();
  const fs::path project = f.dir() / "only-F";
  fs::create_directories(project);
  // No sshConfig here: the alias resolves only through -F.
  std::ofstream(project / "ferry.json") << nlohmann::json{{"host", f.alias()},
                                                          {"interpreter", "/usr/bin/python3"},
                                                          {"mappings", {{{"local", "."}, {"remote", "~/only-f"}}}}}
                                               .dump();
  std::ofstream(project / "hi.py") << "print('hi via -F')\n";
  const std::string F = "-F '" + f.ssh_config().string() + "'";
  const std::string P = "--project '" + project.string() + "'";

  auto without = run_ferry(P + " sync", f.dir());
  BOOST_TEST(without.status != 0, without.out);  // the alias is unknown without -F

  auto synced = run_ferry("sync " + F + " " + P + " --log-level warn", f.dir());
  BOOST_TEST(synced.status == 0, synced.out);
  auto ran = run_ferry("run " + F + " " + P + " -- hi.py", f.dir());
  BOOST_TEST(ran.status == 0, ran.out);
  BOOST_TEST(ran.out.find("hi via -F") != std::string::npos, ran.out);
  auto listed = run_ferry("runs " + P + " " + F + " --json", f.dir());
  BOOST_TEST(listed.status == 0, listed.out);
  auto tunnel_help = run_ferry("tunnel " + F + " " + P + " --help", f.dir());
  BOOST_TEST(tunnel_help.status == 0, tunnel_help.out);

  // The server, started the way an editor's settings would: `ferry -F FILE --project DIR serve`.
  ferry::test::ServeProcess serve({FERRY_BIN, "-F", f.ssh_config().string(), "--project", project.string(), "serve"});
  BOOST_REQUIRE(serve.call(1, "initialize", {{"capabilities", nlohmann::json::object()}}, std::chrono::seconds(30)));
  auto connected = serve.call(2, "host/connect", nlohmann::json::object(), std::chrono::seconds(60));
  BOOST_REQUIRE(connected);
  BOOST_TEST(connected->contains("result"), connected->dump());
  BOOST_TEST((*connected)["result"]["remoteRoot"] == (f.home() / "only-f").string(), connected->dump());
  BOOST_REQUIRE(serve.call(3, "shutdown", nullptr, std::chrono::seconds(30)));
  serve.send({{"jsonrpc", "2.0"}, {"method", "exit"}});
}

// The `ferry` binary links libcrypto statically and loads the system's libcurl (with its own shared
// libcrypto) on the first webhook: the two must not meet. A run ending with status 5 under the
// binary's `ferry serve` reaches a local receiver as run.failed (tests link the shared libraries,
// so only this process has that pair).
BOOST_AUTO_TEST_CASE(the_ferry_binary_posts_a_run_webhook_through_the_systems_libcurl) {
  ferry::test::TempDir dir("ferry-webhook-bin");
  const fs::path project = dir / "p";
  fs::create_directories(project);
  std::ofstream(project / "ferry.json") << R"({"name": "hook", "host": "local", "mappings": [{"local": ".", "remote": "~/ferry-hook-test"}]})";
  const fs::path port_file = dir / "port", out_file = dir / "out.json";
  ferry::test::run_shell("/usr/bin/python3 '" FERRY_WEBHOOK_RECEIVER "' --port-file '" + port_file.string() + "' --out '" +
                         out_file.string() + "' >/dev/null 2>&1 &");
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(port_file) && fs::file_size(port_file) > 0; }, std::chrono::seconds(20)));
  std::string port;
  std::ifstream(port_file) >> port;
  ::setenv("FERRY_WEBHOOK_URL", ("http://127.0.0.1:" + port + "/hook").c_str(), 1);
  ferry::test::ServeProcess serve({FERRY_BIN, "--project", project.string(), "serve"});
  ::unsetenv("FERRY_WEBHOOK_URL");
  BOOST_REQUIRE(serve.call(1, "initialize", {{"capabilities", nlohmann::json::object()}}, std::chrono::seconds(30)));
  auto synced = serve.call(4, "sync/flush", nlohmann::json::object(), std::chrono::seconds(60));  // the run's cwd
  BOOST_REQUIRE(synced);
  BOOST_TEST(synced->contains("result"), synced->dump());
  auto started = serve.call(2, "run/start", {{"argv", {"sh", "-c", "exit 5"}}}, std::chrono::seconds(60));
  BOOST_REQUIRE(started);
  BOOST_TEST(started->contains("result"), started->dump());
  BOOST_REQUIRE_MESSAGE(ferry::test::eventually([&] { return fs::exists(out_file); }, std::chrono::seconds(30)),
                        "no webhook reached the receiver");
  auto got = nlohmann::json::parse(std::ifstream(out_file), nullptr, false);
  BOOST_REQUIRE(got.is_object());
  auto body = nlohmann::json::parse(got.value("body", ""), nullptr, false);
  BOOST_TEST(body.value("event", "") == "run.failed", got.dump());
  BOOST_TEST(body.value("exitCode", 0) == 5, got.dump());
  BOOST_REQUIRE(serve.call(3, "shutdown", nullptr, std::chrono::seconds(30)));
  serve.send({{"jsonrpc", "2.0"}, {"method", "exit"}});
}
