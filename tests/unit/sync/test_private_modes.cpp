// Issue #41: what ferry keeps for itself is its user's alone. After a sync and a run through the
// local host, the agent's state (runs, connection marks, autostop), the box root's .ferry/ and the
// project's .ferry/ are 0700 directories of 0600 files, also where an older ferry left them 0755;
// the synced tree keeps its own modes.
#define BOOST_TEST_MODULE private_modes
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "helper/remote/local_endpoint.hpp"
#include "helper/sync/sync_engine.hpp"
#include "tests/support/sandbox_agent.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::sync;
namespace fs = std::filesystem;
using ferry::test::TempDir;
using ferry::test::write_file;
using json = nlohmann::json;

namespace {

std::vector<std::uint8_t> text(const std::string& s) { return {s.begin(), s.end()}; }

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  BOOST_REQUIRE_MESSAGE(::lstat(p.c_str(), &st) == 0, p << " is missing");
  return st.st_mode & 07777;
}

// Every directory at or below `dir` 0700 and every file 0600 (FIFOs and sockets too).
void require_private_tree(const fs::path& dir) {
  BOOST_TEST(mode_of(dir) == 0700u, dir << " is " << std::oct << mode_of(dir));
  int files = 0;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    const mode_t want = it->is_directory() ? 0700 : 0600;
    BOOST_TEST(mode_of(it->path()) == want, it->path() << " is " << std::oct << mode_of(it->path()));
    files += !it->is_directory();
  }
  BOOST_TEST(files > 0, dir << " holds no files: nothing was checked");
}

// What an older ferry left: a directory of 0755 with a 0644 file in it.
void make_open_dir(const fs::path& dir, const std::string& file) {
  fs::create_directories(dir);
  ::chmod(dir.c_str(), 0755);
  write_file(dir / file, text("old\n"));
  ::chmod((dir / file).c_str(), 0644);
}

struct Umask {
  mode_t saved = ::umask(022);  // as a login's: a created file would be 0644 unless ferry says so
  ~Umask() { ::umask(saved); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(state_written_through_the_local_host_is_owner_only) {
  Umask umask;
  TempDir t;
  const fs::path local = t.path() / "local", sandbox = t.path() / "sandbox", state = t.path() / "state";
  write_file(local / "train.py", text("import torch\n"));
  write_file(local / "run.sh", text("#!/bin/sh\n"));
  ::chmod((local / "run.sh").c_str(), 0755);
  make_open_dir(local / ".ferry", "sync.lock");
  make_open_dir(state, "notes");
  make_open_dir(state / "runs", "stray");
  ::chmod((state / "notes").c_str(), 0600);  // not ferry's to know; only the dirs above are checked for it

  auto ep = ferry::test::connect_sandbox_agent(FERRY_AGENT_PATH, sandbox, {"--state-dir", state.string()});
  SyncEngine engine(*ep, SyncTarget{local, "proj", "local", "~/proj", {}, {}});
  auto pushed = engine.push({});
  BOOST_REQUIRE_MESSAGE(pushed.has_value(), (pushed ? "" : pushed.error().message));
  auto started = ep->call("run/start", json{{"argv", {"/bin/true"}}, {"cwd", "proj"}});
  BOOST_REQUIRE_MESSAGE(started.has_value(), (started ? "" : started.error().message));
  const std::string run_id = started->at("id");
  auto armed = ep->call("autostop/set", json{{"idleSeconds", 3600}, {"action", "notify"}});
  BOOST_REQUIRE_MESSAGE(armed.has_value(), (armed ? "" : armed.error().message));

  // The box: its state dir, the runs and this run, the connection marks, autostop.
  BOOST_TEST(mode_of(state) == 0700u);
  BOOST_TEST(mode_of(state / "runs") == 0700u);
  require_private_tree(state / "runs" / run_id);
  require_private_tree(state / "agents");
  BOOST_TEST(mode_of(state / "agents" / std::to_string(ep->info().pid)) == 0600u);
  require_private_tree(state / "autostop");
  require_private_tree(sandbox / "proj" / ".ferry");
  // The project's .ferry/ (manifest, index, lock), the old 0644 lock included.
  require_private_tree(local / ".ferry");
  // The synced files keep the user's modes, exec bit and all.
  BOOST_TEST(mode_of(sandbox / "proj" / "run.sh") == 0755u);
  BOOST_TEST(mode_of(sandbox / "proj" / "train.py") == 0644u);

  BOOST_TEST(ep->call("autostop/cancel", json::object()).has_value());
  ep->close();
}

// Over SSH the agent runs from ~/.cache/ferry/agent/<version> with stderr appended to agent.log
// there, which the login shell made under its umask (and older ferries made the dir 0755):
// `--installed` makes both owner-only before anything is logged.
BOOST_AUTO_TEST_CASE(an_installed_agent_keeps_its_dir_and_log_private) {
  Umask umask;
  TempDir t;
  const fs::path dir = t.path() / "agent" / "0.1.0";
  make_open_dir(dir, "agent.log");
  fs::copy_file(FERRY_AGENT_PATH, dir / "ferry-agent-0123456789abcdef");
  const std::string cmd = "'" + (dir / "ferry-agent-0123456789abcdef").string() + "' --installed --version >/dev/null 2>>'" +
                          (dir / "agent.log").string() + "'";
  BOOST_REQUIRE(std::system(cmd.c_str()) == 0);
  BOOST_TEST(mode_of(dir) == 0700u);
  BOOST_TEST(mode_of(dir / "agent.log") == 0600u);
  BOOST_TEST(mode_of(t.path() / "agent") == 0755u);  // above the install: the user's, left alone
}
