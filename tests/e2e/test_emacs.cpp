// End to end with a second client ferry did not write: Debian's Emacs 28 with eglot 1.9
// (`emacs-nox`, `elpa-eglot`), in batch mode, runs `ferry serve` on a project whose host is a
// real sshd, configured as docs/ide.md tells a user ("Emacs (eglot)"). Editing main.py and saving
// puts it on the box; the Run lens above the main guard (eglot 1.9 has no lens UI: the docs'
// ferry-lens-at-point asks for textDocument/codeLens and runs the pick with
// workspace/executeCommand) runs it there, and since eglot cannot open documents for the server
// the log file and the exit come as messages; a broken ferry.json gets a flymake diagnostic at the
// broken key, and fixing it clears it; eglot's shutdown (with its null params) ends ferry politely.
// The Lisp side is emacs/ferry_e2e.el.
#define BOOST_TEST_MODULE emacs_e2e
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/spawned_process.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::test::SshdFixture;
using json = nlohmann::json;
using ferry::test::read_file;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// The 0-based line and column where `needle` first occurs in `text`.
std::pair<int, int> position_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  if (at == std::string::npos) return {-1, -1};
  const auto line_start = text.rfind('\n', at);
  const int col = static_cast<int>(at - (line_start == std::string::npos ? 0 : line_start + 1));
  return {static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n')), col};
}

// `ferry` on PATH, as a user has it: the docs' snippet names the program, not a path.
std::string path_with_ferry() {
  const char* path = std::getenv("PATH");
  return fs::path(FERRY_BIN).parent_path().string() + ":" + (path ? path : "/usr/bin:/bin");
}

// Runs emacs/ferry_e2e.el in `project`; what batch Emacs printed (its steps), for a failure's report.
std::string run_emacs(const SshdFixture& f, const fs::path& project, const fs::path& results) {
  ferry::test::SpawnedProcess emacs({"/usr/bin/emacs", "--batch", "-l", FERRY_E2E_EL}, project.string(),
                                    {{"PATH", path_with_ferry()},
                                     {"FERRY_AGENT", FERRY_AGENT_PATH},
                                     {"FERRY_E2E_PROJECT", project.string()},
                                     {"FERRY_E2E_BOX", (f.home() / "proj").string()},
                                     {"FERRY_E2E_RESULTS", results.string()},
                                     {"FERRY_E2E_EMACS_HOME", (f.dir() / "emacs.d").string()},
                                     {"XDG_CACHE_HOME", (f.dir() / "cache").string()},
                                     {"SSH_AUTH_SOCK", ""}});
  std::string screen;
  while (auto line = emacs.read_line(240s)) screen += *line + "\n";
  BOOST_REQUIRE_MESSAGE(emacs.wait(10s).has_value(), "emacs did not finish:\n" << screen);
  return screen;
}

}  // namespace

BOOST_AUTO_TEST_CASE(emacs_eglot_saves_runs_from_a_code_lens_and_sees_diagnostics) {
  SshdFixture f;
  f.trust_host_key();
  const fs::path project = f.dir() / "emacs-project";
  const std::string config = json{{"name", "emacs"},
                                  {"host", f.alias()},
                                  {"sshConfig", f.ssh_config().string()},
                                  {"interpreter", "/usr/bin/python3"},
                                  {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}}
                                 .dump(2) + "\n";
  ferry::test::write_file(project / "ferry.json", config);
  ferry::test::write_file(project / "main.py", "print('before the edit')\n");
  const fs::path results = f.dir() / "emacs-results.json";

  const std::string screen = run_emacs(f, project, results);
  BOOST_REQUIRE_MESSAGE(fs::exists(results), "emacs wrote no results (are emacs-nox and elpa-eglot installed? "
                                             "scripts/setup.sh installs them):\n" << screen << "\nsshd:\n" << f.log());
  const json r = json::parse(read_file(results));
  BOOST_TEST_MESSAGE(r.dump(2));
  for (const auto& s : r["steps"])
    BOOST_TEST(s["ok"].get<bool>(), s["name"].get<std::string>() + ": " + s["detail"].get<std::string>());
  BOOST_REQUIRE(r["steps"].back()["name"] == "done");

  // The edit is on the box, and the lens ran it there; the log is in ferry's state folder.
  BOOST_TEST(read_file(f.home() / "proj" / "main.py").find("edited in emacs") != std::string::npos);
  const std::string exit_message = r["exit_message"];
  BOOST_TEST(exit_message.find("main.py on " + f.alias() + " exited with status 0") != std::string::npos, exit_message);
  const std::string log = r["log_path"];
  BOOST_TEST(log.starts_with(project.string() + "/.ferry/logs/main-"), log);
  BOOST_TEST(exit_message.find("(output: " + log + ")") != std::string::npos, exit_message);
  BOOST_TEST(r["log_text"] == "edited in emacs, run on the box\n");
  // Lenses: Run and Debug on the main guard's line (0-based 2), and only those there.
  const json lenses = json::array({"\u25B6 Run on " + f.alias() + "@2", "Debug on " + f.alias() + "@2"});
  BOOST_TEST(r["lenses"] == lenses, r["lenses"].dump());
  // The diagnostic sits on the broken line, at the misspelt key.
  const auto [line, col] = position_of(config, "\"interpreter\"");
  BOOST_REQUIRE(line > 0);
  BOOST_REQUIRE_EQUAL(r["diagnostics"].size(), 1u);
  BOOST_TEST(r["diagnostics"][0]["line"] == line, r["diagnostics"].dump());
  BOOST_TEST(r["diagnostics"][0]["col"] == col, r["diagnostics"].dump());
  BOOST_TEST(r["diagnostics"][0]["message"].get<std::string>().find("interpretr") != std::string::npos, r["diagnostics"].dump());
  // eglot 1.9 sends `"params": null` with shutdown and exit: ferry takes it as none and shuts
  // down politely (it once refused it, and eglot then killed ferry serve).
  BOOST_TEST(r["shutdown"] == "polite", "eglot-shutdown: " << r["shutdown"].dump());
}
