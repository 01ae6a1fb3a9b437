// `ferry serve` with hostile repositories, as an editor that starts it by itself opens them: until
// the person trusts the project nothing runs (no marker file, no child process, no sandbox),
// nothing connects (a listener that records connects sees none), the question is asked once
// (showMessageRequest: Trust / Not now) and later requests fail with -32093; after trust the
// same project works; a changed ferry.json asks again.
#define BOOST_TEST_MODULE project_trust_serve
#include <boost/test/unit_test.hpp>

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "protocol/file_uri.hpp"
#include "tests/support/connect_recorder.hpp"
#include "tests/support/serve_client.hpp"
#include "tests/support/temp_dir.hpp"

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ferry::protocol::path_to_file_uri;
using ferry::test::ServeClient;
using ferry::test::TempDir;

namespace {

constexpr int kProjectUntrusted = -32093;

struct Env {
  TempDir cache{"ferry-trust-cache"};
  TempDir config{"ferry-trust-config"};  // an empty store: nothing is trusted
  Env() {
    ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
    ::setenv("XDG_CACHE_HOME", cache.path().c_str(), 1);
    ::setenv("XDG_CONFIG_HOME", config.path().c_str(), 1);
  }
};
Env* g_env = nullptr;
struct EnvHolder {
  Env env;
  EnvHolder() { g_env = &env; }
};

struct Project {
  TempDir dir{"ferry-hostile"};
  std::string name;
  json doc;
  explicit Project(const std::string& n) : name(n) {
    doc = {{"name", name}, {"host", "local"}, {"interpreter", "/usr/bin/python3"},
           {"mappings", {{{"local", "."}, {"remote", "~/work/" + name}}}}};
    ferry::test::write_file(dir / "main.py", "print('hi')\n");
    save();
  }
  void save() const { ferry::test::write_file(dir / "ferry.json", doc.dump(2)); }
  fs::path sandbox() const { return g_env->cache.path() / "ferry" / "local" / name; }
  std::string uri(const std::string& rel) const { return path_to_file_uri((dir.path() / rel).string()); }
};

// The editor's answer to every trust question.
ServeClient::Answer answering(const std::string& title) {
  return [title](const json& request) -> json {
    if (request["method"] == "window/showMessageRequest") return {{"result", title.empty() ? json(nullptr) : json{{"title", title}}}};
    return {{"result", nullptr}};
  };
}

std::vector<std::string> questions(const ServeClient& c) {
  std::vector<std::string> out;
  for (const auto& r : c.server_requests)
    if (r["method"] == "window/showMessageRequest") out.push_back(r["params"]["message"].get<std::string>());
  return out;
}

// This process's children (the in-process server's agents and probes would be ours).
int child_processes() {
  int n = 0;
  const std::string self = std::to_string(::getpid());
  DIR* d = ::opendir("/proc");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state, ppid;
    rest >> state >> ppid;
    n += ppid == self && state != "Z";
  }
  if (d) ::closedir(d);
  return n;
}

void did_save(ServeClient& c, const Project& p, const std::string& rel) {
  c.notify("textDocument/didSave", {{"textDocument", {{"uri", p.uri(rel)}}}});
}

json plain() { return {{"window", {{"workDoneProgress", true}}}}; }

}  // namespace

BOOST_GLOBAL_FIXTURE(EnvHolder);

BOOST_AUTO_TEST_CASE(a_hostile_local_project_runs_and_arms_nothing_before_trust_and_asks_once) {
  Project p("hostile-local");
  const fs::path marker = p.dir / "MARKER", armed = p.dir / "ARMED";
  p.doc["interpreter"] = "sh -c touch${IFS}" + marker.string();
  p.doc["autostop"] = {{"enabled", true}, {"idleMinutes", 1}, {"action", "command"}, {"command", "touch " + armed.string()}};
  p.save();
  fs::create_directories(p.dir / ".ferry" / "venv");  // what made the env refresh probe the interpreter
  ServeClient c(p.dir.path(), plain(), p.uri(""));
  did_save(c, p, "main.py");
  c.notify("workspace/didChangeWatchedFiles", {{"changes", {{{"uri", p.uri(".idea/workspace.xml")}, {"type", 2}}}}});
  auto flushed = c.call("sync/flush", json::object(), answering("Not now"));
  BOOST_REQUIRE_MESSAGE(flushed.contains("error"), flushed.dump());
  BOOST_TEST(flushed["error"]["code"] == kProjectUntrusted);
  BOOST_TEST(flushed["error"]["message"].get<std::string>().find("ferry trust-project") != std::string::npos);
  auto run = c.call("workspace/executeCommand", {{"command", "ferry.run"}, {"arguments", {p.uri("main.py")}}}, answering("Not now"));
  BOOST_TEST(run["error"]["code"] == kProjectUntrusted, run.dump());
  const auto asked = questions(c);
  BOOST_REQUIRE_EQUAL(asked.size(), 1u);  // once, whatever triggered it
  BOOST_TEST(asked[0].find("Do you trust the project " + p.dir.path().string()) != std::string::npos, asked[0]);
  BOOST_TEST(asked[0].find("on THIS machine") != std::string::npos, asked[0]);
  BOOST_TEST(asked[0].find("autostop runs the shell command `touch " + armed.string() + "`") != std::string::npos, asked[0]);
  BOOST_TEST(!fs::exists(marker));
  BOOST_TEST(!fs::exists(armed));
  BOOST_TEST(!fs::exists(p.sandbox()));  // no agent ever started for it
  BOOST_TEST(child_processes() == 0);
}

BOOST_AUTO_TEST_CASE(a_repository_ssh_config_logs_in_nowhere_until_trusted) {
  ferry::test::ConnectRecorder box;
  Project p("hostile-ssh");
  ferry::test::write_file(p.dir / "ssh_config", "Host evil\n  HostName 127.0.0.1\n  Port " + std::to_string(box.port()) +
                                                   "\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n");
  p.doc["host"] = "evil";
  p.doc["sshConfig"] = "ssh_config";
  p.doc["tunnels"] = {{{"name", "laptop-db"}, {"kind", "reverse"}, {"localPort", 5432}, {"remotePort", 15432}}};
  p.save();
  ServeClient c(p.dir.path(), plain(), p.uri(""));
  did_save(c, p, "main.py");
  auto connect = c.call("host/connect", json::object(), answering("Not now"));
  BOOST_TEST(connect["error"]["code"] == kProjectUntrusted, connect.dump());
  const auto asked = questions(c);
  BOOST_REQUIRE_EQUAL(asked.size(), 1u);
  BOOST_TEST(asked[0].find("a file inside this project") != std::string::npos, asked[0]);
  BOOST_TEST(asked[0].find("StrictHostKeyChecking is no") != std::string::npos, asked[0]);
  BOOST_TEST(asked[0].find("127.0.0.1:5432 on this machine") != std::string::npos, asked[0]);
  BOOST_TEST(box.count() == 0);  // not even a TCP connect
  // The person trusts it from the editor: now ferry does try the host (the recorder is no sshd).
  auto trusted = c.call("workspace/executeCommand", {{"command", "ferry.trustProject"}, {"arguments", json::array()}},
                        answering("Trust project"));
  BOOST_REQUIRE_MESSAGE(trusted.contains("result"), trusted.dump());
  BOOST_TEST(trusted["result"]["trusted"] == true);
  auto again = c.call("host/connect", json::object(), answering("Not now"));
  BOOST_TEST(again.contains("error"));
  BOOST_TEST(again["error"]["code"] != kProjectUntrusted, again.dump());
  BOOST_TEST(box.count() >= 1);
}

BOOST_AUTO_TEST_CASE(after_trust_the_project_syncs_and_is_not_asked_again) {
  Project p("trusted-later");
  ServeClient c(p.dir.path(), ServeClient::ferry_capabilities(), p.uri(""));
  auto first = c.call("sync/push", json::object(), answering("Trust project"));
  BOOST_REQUIRE_MESSAGE(first.contains("result"), first.dump());
  BOOST_TEST(fs::exists(p.sandbox() / "work" / p.name / "main.py"));
  ferry::test::write_file(p.dir / "main.py", "print('edited')\n");
  auto second = c.call("sync/push", json::object(), answering("Not now"));
  BOOST_REQUIRE_MESSAGE(second.contains("result"), second.dump());
  BOOST_TEST(questions(c).size() == 1u);
  // A ferry-aware client heard about both states (its status bar).
  std::vector<bool> states;
  for (const auto& n : c.notifications)
    if (n["method"] == "project/trust") states.push_back(n["params"]["trusted"].get<bool>());
  BOOST_TEST(states == (std::vector<bool>{false, true}));
}

BOOST_AUTO_TEST_CASE(a_changed_ferry_json_is_asked_about_again_and_its_link_closed) {
  Project p("changed-later");
  ServeClient c(p.dir.path(), plain(), p.uri(""));
  auto first = c.call("sync/push", json::object(), answering("Trust project"));
  BOOST_REQUIRE_MESSAGE(first.contains("result"), first.dump());
  p.doc["interpreter"] = "/usr/bin/python3 -I";
  p.save();
  auto second = c.call("sync/push", json::object(), answering("Not now"));
  BOOST_TEST(second["error"]["code"] == kProjectUntrusted, second.dump());
  const auto asked = questions(c);
  BOOST_REQUIRE_EQUAL(asked.size(), 2u);
  BOOST_TEST(asked[1].find("changed since you trusted it (interpreter)") != std::string::npos, asked[1]);
  BOOST_TEST(child_processes() == 0);  // the old link's agent is gone with it
}

BOOST_AUTO_TEST_CASE(diagnostics_still_work_for_an_untrusted_project) {
  Project p("diag-untrusted");
  p.doc["interpreter"] = 42;  // wrong type
  p.save();
  ServeClient c(p.dir.path(), plain(), p.uri(""));
  std::ifstream in(p.dir / "ferry.json");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  c.notify("textDocument/didOpen",
           {{"textDocument", {{"uri", p.uri("ferry.json")}, {"languageId", "json"}, {"version", 1}, {"text", text}}}});
  auto diag = c.wait_notification([](const json& n) { return n["method"] == "textDocument/publishDiagnostics"; }, 20s);
  BOOST_REQUIRE(diag);
  BOOST_TEST(!(*diag)["params"]["diagnostics"].empty());
  BOOST_TEST(questions(c).empty());  // diagnostics ask nothing
}
