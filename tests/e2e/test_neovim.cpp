// End to end with a client ferry did not write: Neovim 0.7's built-in LSP client (Debian's
// `neovim`), headless, runs `ferry serve` on a project whose host is a real sshd. Editing and
// `:w` puts the file on the box; the code lens above the main guard runs it there (output in a
// log file the editor is asked to show, the exit as a message); a broken ferry.json gets a
// diagnostic at the broken line, and fixing it clears it; env/sync mirrors the box's packages and
// a Python language server started beside ferry (Debian's pylsp, jedi) with .ferry/venv answers
// definition and hover on torch.nn from the mirror, though the laptop's python has no torch. The
// Lua side is neovim/ferry_e2e.lua. And a hostile repository (neovim/hostile_repo.lua): the
// person says "Not now" to the trust question, and saves, commands and a connect do nothing.
#define BOOST_TEST_MODULE neovim_e2e
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/connect_recorder.hpp"
#include "tests/support/spawned_process.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::test::SshdFixture;
using json = nlohmann::json;
using ferry::test::read_file;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// The 0-based line of the first line containing `needle`.
int line_of(const std::string& text, const std::string& needle) {
  int line = 0;
  for (std::size_t at = 0; at < text.size();) {
    auto end = text.find('\n', at);
    if (text.substr(at, end - at).find(needle) != std::string::npos) return line;
    if (end == std::string::npos) break;
    at = end + 1;
    ++line;
  }
  return -1;
}

}  // namespace

BOOST_AUTO_TEST_CASE(neovim_saves_runs_from_a_code_lens_and_sees_diagnostics) {
  SshdFixture f;
  f.trust_host_key();
  const fs::path project = f.dir() / "nvim-project";
  const std::string config = json{{"name", "nvim"},
                                  {"host", f.alias()},
                                  {"sshConfig", f.ssh_config().string()},
                                  {"interpreter", "/usr/bin/python3"},
                                  {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}}
                                 .dump(2) + "\n";
  ferry::test::write_file(project / "ferry.json", config);
  ferry::test::write_file(project / "main.py", "print('before the edit')\n");
  const int broken_line = line_of(config, "\"interpreter\"");
  BOOST_REQUIRE(broken_line > 0);
  const fs::path results = f.dir() / "nvim-results.json";

  ferry::test::SpawnedProcess nvim(
      {"/usr/bin/nvim", "--headless", "--clean", "-u", "NONE", "-c", "luafile " FERRY_E2E_LUA},
      project.string(),
      {{"FERRY_BIN", FERRY_BIN},
       {"FERRY_AGENT", FERRY_AGENT_PATH},
       {"FERRY_E2E_PROJECT", project.string()},
       {"FERRY_E2E_BOX", (f.home() / "proj").string()},
       {"FERRY_E2E_RESULTS", results.string()},
       {"FERRY_E2E_BROKEN_LINE", std::to_string(broken_line)},
       {"FERRY_E2E_PYLSP", "/usr/bin/pylsp"},
       {"XDG_CACHE_HOME", (f.dir() / "cache").string()},
       {"SSH_AUTH_SOCK", ""}});
  std::string screen;  // what headless nvim printed (its messages), for a failure's report
  while (auto line = nvim.read_line(240s)) screen += *line + "\n";
  auto status = nvim.wait(10s);
  BOOST_REQUIRE_MESSAGE(status.has_value(), "nvim did not finish:\n" << screen);
  BOOST_REQUIRE_MESSAGE(fs::exists(results), "nvim wrote no results (is neovim installed? scripts/setup.sh installs it):\n"
                                                 << screen << "\nsshd:\n" << f.log());
  const json r = json::parse(read_file(results));
  BOOST_TEST_MESSAGE(r.dump(2));
  for (const auto& s : r["steps"]) BOOST_TEST(s["ok"].get<bool>(), s["name"].get<std::string>() + ": " + s["detail"].get<std::string>());
  BOOST_REQUIRE(r["steps"].back()["name"] == "done");

  // The edit is on the box, and the lens ran it there.
  BOOST_TEST(read_file(f.home() / "proj" / "main.py").find("edited in neovim") != std::string::npos);
  BOOST_TEST(r["exit_message"].get<std::string>().find("exited with status 0") != std::string::npos, r["exit_message"]);
  const std::string log = r["documents"][0];
  BOOST_TEST(log.find(project.string() + "/.ferry/logs/main-") == 0u, log);
  BOOST_TEST(r["log_text"] == "edited in neovim, run on the box\n");
  // Lenses: Run and Debug on the main guard's line (0-based 2).
  BOOST_TEST(r["lenses"].dump().find("Run on " + f.alias() + "@2") != std::string::npos, r["lenses"].dump());
  BOOST_TEST(r["lenses"].dump().find("Debug on " + f.alias() + "@2") != std::string::npos, r["lenses"].dump());
  // The diagnostic sits on the broken line, at the misspelt key.
  BOOST_REQUIRE(!r["diagnostics"].empty());
  BOOST_TEST(r["diagnostics"][0]["line"] == broken_line, r["diagnostics"].dump());
  BOOST_TEST(r["diagnostics"][0]["col"] == config.substr(0).find("\"interpreter\"") -
                                               (config.rfind('\n', config.find("\"interpreter\"")) + 1),
             r["diagnostics"].dump());
  // torch.nn from the box's mirror (outside the project, in the cache), not from this machine.
  const std::string mirror = (f.dir() / "cache" / "ferry" / "env").string();
  BOOST_TEST(r["definition_nn"].get<std::string>().starts_with(mirror), r["definition_nn"]);
  BOOST_TEST(r["definition_nn"].get<std::string>().ends_with("/torch/nn/__init__.py"), r["definition_nn"]);
  BOOST_TEST(r["definition_linear"].get<std::string>().starts_with(mirror), r["definition_linear"]);
  BOOST_TEST(r["definition_linear"].get<std::string>().ends_with("/torch/nn/modules/linear.py"), r["definition_linear"]);
  BOOST_TEST(r["hover_linear"].get<std::string>().find("linear transformation") != std::string::npos, r["hover_linear"]);
}

namespace {

// Runs neovim/hostile_repo.lua on `project` with an empty trust store; its results.
json open_untrusted_in_neovim(const fs::path& project, const fs::path& scratch) {
  const fs::path results = scratch / "hostile-results.json";
  ferry::test::SpawnedProcess nvim({"/usr/bin/nvim", "--headless", "--clean", "-u", "NONE", "-c", "luafile " FERRY_E2E_HOSTILE_LUA},
                                   project.string(),
                                   {{"FERRY_BIN", FERRY_BIN},
                                    {"FERRY_AGENT", FERRY_AGENT_PATH},
                                    {"FERRY_E2E_PROJECT", project.string()},
                                    {"FERRY_E2E_RESULTS", results.string()},
                                    {"XDG_CACHE_HOME", (scratch / "cache").string()},
                                    {"XDG_CONFIG_HOME", (scratch / "config").string()},
                                    {"SSH_AUTH_SOCK", ""}});
  std::string screen;
  while (auto line = nvim.read_line(120s)) screen += *line + "\n";
  auto status = nvim.wait(10s);
  if (!status || !fs::exists(results)) throw std::runtime_error("nvim did not finish or wrote no results:\n" + screen);
  return json::parse(read_file(results));
}

}  // namespace

BOOST_AUTO_TEST_CASE(neovim_on_a_hostile_local_repository_runs_nothing_before_trust) {
  ferry::test::TempDir scratch("ferry-nvim-hostile");
  const fs::path project = scratch / "cloned";
  const fs::path marker = scratch / "MARKER", armed = scratch / "ARMED";
  ferry::test::write_file(project / "ferry.json",
                          json{{"name", "cloned"},
                               {"host", "local"},
                               {"interpreter", "sh -c touch${IFS}" + marker.string()},
                               {"autostop", {{"enabled", true}, {"idleMinutes", 1}, {"action", "command"}, {"command", "touch " + armed.string()}}},
                               {"mappings", {{{"local", "."}, {"remote", "~/work/cloned"}}}}}
                              .dump(2));
  ferry::test::write_file(project / "main.py", "print('hi')\n");
  fs::create_directories(project / ".ferry" / "venv");
  const json r = open_untrusted_in_neovim(project, scratch.path());
  BOOST_TEST_MESSAGE(r.dump(2));
  BOOST_REQUIRE(r["initialized"] == true);
  BOOST_REQUIRE_EQUAL(r["questions"].size(), 1u);  // once, for three saves and commands
  BOOST_TEST(r["questions"][0].get<std::string>().find("on THIS machine") != std::string::npos);
  BOOST_TEST(r["errors"] == json::array({-32093, -32093, -32093}), r["errors"].dump());
  BOOST_TEST(r["children"][0] == 0);  // ferry serve started no agent, probe or shell
  BOOST_TEST(!fs::exists(marker));
  BOOST_TEST(!fs::exists(armed));
  BOOST_TEST(!fs::exists(scratch / "cache" / "ferry" / "local" / "cloned"));
  BOOST_TEST(!fs::exists(scratch / "config" / "ferry" / "trust" / "projects"));  // nothing recorded
}

BOOST_AUTO_TEST_CASE(neovim_on_a_repository_with_its_own_ssh_config_connects_nowhere) {
  ferry::test::TempDir scratch("ferry-nvim-hostile");
  ferry::test::ConnectRecorder box;
  const fs::path project = scratch / "cloned";
  ferry::test::write_file(project / "ssh_config", "Host evil\n  HostName 127.0.0.1\n  Port " + std::to_string(box.port()) +
                                                      "\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n");
  ferry::test::write_file(project / "ferry.json",
                          json{{"name", "cloned"},
                               {"host", "evil"},
                               {"sshConfig", "ssh_config"},
                               {"tunnels", {{{"name", "back"}, {"kind", "reverse"}, {"localPort", 5432}, {"remotePort", 15432}}}},
                               {"mappings", {{{"local", "."}, {"remote", "~/work/cloned"}}}}}
                              .dump(2));
  ferry::test::write_file(project / "main.py", "print('hi')\n");
  const json r = open_untrusted_in_neovim(project, scratch.path());
  BOOST_TEST_MESSAGE(r.dump(2));
  BOOST_REQUIRE_EQUAL(r["questions"].size(), 1u);
  const std::string q = r["questions"][0];
  BOOST_TEST(q.find("a file inside this project") != std::string::npos, q);
  BOOST_TEST(q.find("StrictHostKeyChecking is no") != std::string::npos, q);
  BOOST_TEST(r["errors"] == json::array({-32093, -32093, -32093}), r["errors"].dump());
  BOOST_TEST(r["children"][0] == 0);
  BOOST_TEST(box.count() == 0);  // not a TCP connect, not a key exchange
}
