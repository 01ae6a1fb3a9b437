// SyncEngine's errors carry their kind from where they began (protocol/error.hpp): a push over
// a LocalEndpoint whose real agent was killed is agent_lost (the endpoint's -32097, not a guess
// from the link's state), a project whose .ferry cannot hold the lock is io, and a pull path
// that leaves the mapping is invalid_input; the messages stay the engine's own words.
#define BOOST_TEST_MODULE sync_error_kinds
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include "helper/remote/local_endpoint.hpp"
#include "helper/sync/sync_engine.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/sandbox_agent.hpp"

using namespace ferry::sync;
namespace fs = std::filesystem;
using ferry::ErrorKind;
using ferry::remote::LocalEndpoint;
using ferry::remote::LocalEndpointOptions;
using ferry::test::TempDir;
using ferry::test::write_file;

namespace {

struct Fixture {
  TempDir t{"ferry-error-kinds"};
  fs::path local = t / "local";
  fs::path sandbox = t / "sandbox";
  std::unique_ptr<LocalEndpoint> ep;

  Fixture() {
    write_file(local / "train.py", "print(1)\n");
    ep = ferry::test::connect_sandbox_agent(FERRY_AGENT_PATH, sandbox);
  }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(a_push_whose_agent_was_killed_is_agent_lost, Fixture) {
  SyncEngine e(*ep, SyncTarget{local, "proj", "local", "~/proj", {}, {}});
  BOOST_REQUIRE(e.push({}).has_value());  // the link works: what follows is the agent's loss
  write_file(local / "more.py", "print(2)\n");
  const pid_t agent = ep->child_pid();
  BOOST_REQUIRE(agent > 0);
  BOOST_REQUIRE(::kill(agent, SIGKILL) == 0);
  auto s = e.push({});
  BOOST_REQUIRE(!s.has_value());
  BOOST_TEST(ferry::to_string(s.error().kind) == "agent_lost", s.error().message);
  BOOST_TEST(s.error().message.starts_with("sync/state on "), s.error().message);
  BOOST_TEST(ferry::error_code_of(s.error().kind) == -32097);
}

BOOST_FIXTURE_TEST_CASE(a_project_whose_state_folder_cannot_be_written_is_io, Fixture) {
  // .ferry is a file: the project lock (.ferry/sync.lock) cannot be made. Not a permission
  // check: the tests run as root, which any mode lets through.
  write_file(local / ".ferry", "not a folder\n");
  SyncEngine e(*ep, SyncTarget{local, "proj", "local", "~/proj", {}, {}});
  auto s = e.push({});
  BOOST_REQUIRE(!s.has_value());
  BOOST_TEST(ferry::to_string(s.error().kind) == "io", s.error().message);
  BOOST_TEST(s.error().message.starts_with("cannot open " + (local / ".ferry" / "sync.lock").string()), s.error().message);
  auto p = e.pull({"train.py"}, {});
  BOOST_REQUIRE(!p.has_value());
  BOOST_TEST(ferry::to_string(p.error().kind) == "io", p.error().message);
}

BOOST_FIXTURE_TEST_CASE(a_pull_path_outside_the_mapping_is_invalid_input, Fixture) {
  SyncEngine e(*ep, SyncTarget{local, "proj", "local", "~/proj", {}, {}});
  auto p = e.pull({"../etc"}, {});
  BOOST_REQUIRE(!p.has_value());
  BOOST_TEST(ferry::to_string(p.error().kind) == "invalid_input", p.error().message);
  BOOST_TEST(p.error().message == "pull: '../etc' must be a path inside the mapping");
  BOOST_TEST(ferry::error_code_of(p.error().kind) == -32602);
}
