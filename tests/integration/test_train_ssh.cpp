// `ferry train` over a real sshd with the real agent: the run starts on the "box" (the fixture's
// home), its events stream back, and the plot, CSV and checkpoint are pulled into the local
// project; a --trainer missing on the box is ferry's own error (255), not a hang.
#define BOOST_TEST_MODULE train_ssh
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/spawned_process.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::test::SshdFixture;
using nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

int status_of(std::optional<int> st) {
  BOOST_TEST_REQUIRE(st.has_value());
  return WIFEXITED(*st) ? WEXITSTATUS(*st) : 128 + WTERMSIG(*st);
}

// A project on the fixture's box with a tiny CPU training config (cfg/tiny.json, outputs in cfg/out).
void write_tiny_project(const fs::path& dir, const SshdFixture& sshd) {
  ferry::test::write_file(dir / "ferry.json", json{{"name", "train-ssh"},
                                                   {"host", sshd.alias()},
                                                   {"sshConfig", sshd.ssh_config().string()},
                                                   {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}}
                                                  .dump());
  json config = {{"model", {{"kind", "mlp"}, {"input_dim", 16}, {"hidden", {32}}, {"output_dim", 4}}},
                 {"data", {{"source", "synthetic"}, {"task", "classification"}, {"samples", 512}, {"workers", 0}}},
                 {"optimizer", {{"kind", "adamw"}, {"lr", 0.003}}},
                 {"batch_size", 32},
                 {"max_steps", 20},
                 {"log_every_steps", 10},
                 {"threads", 1},
                 {"device", "cpu"},
                 {"output_dir", "out"}};
  ferry::test::write_file(dir / "cfg" / "tiny.json", config.dump());
}

// ferry train's event kinds (--json), to its exit.
std::vector<std::string> event_kinds(ferry::test::SpawnedProcess& train) {
  std::vector<std::string> kinds;
  while (auto line = train.read_line(60s)) {
    auto j = json::parse(*line, nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("event")) kinds.push_back(j["event"]);
  }
  return kinds;
}

}  // namespace

BOOST_AUTO_TEST_CASE(train_over_ssh_streams_events_and_pulls_outputs) {
  SshdFixture sshd;
  sshd.trust_host_key();
  ferry::test::TempDir dir("ferry-train-ssh");
  write_tiny_project(dir.path(), sshd);

  ferry::test::SpawnedProcess train({FERRY_BIN, "train", "cfg/tiny.json", "--json", "--trainer", FERRY_TRAIN_BIN}, dir.path().string());
  const auto kinds = event_kinds(train);
  BOOST_TEST_REQUIRE(status_of(train.wait(60s)) == 0);
  BOOST_TEST_REQUIRE(!kinds.empty());
  BOOST_TEST(kinds.front() == "start");
  BOOST_TEST(kinds.back() == "done");
  // It ran on the box (the fixture's home), and its outputs came back.
  BOOST_TEST(fs::is_regular_file(sshd.home() / "proj" / "cfg" / "out" / "plot.svg"));
  BOOST_TEST(ferry::test::read_file(dir / "cfg" / "out" / "plot.svg") ==
             ferry::test::read_file(sshd.home() / "proj" / "cfg" / "out" / "plot.svg"));
  BOOST_TEST(ferry::test::read_file(dir / "cfg" / "out" / "metrics.csv").starts_with("step,epoch,loss"));
  BOOST_TEST(fs::is_regular_file(dir / "cfg" / "out" / "checkpoints" / "ckpt-0000000020.ferry"));

  // A --trainer that is not on the box: ferry's own failure, at once (without --trainer ferry
  // builds one there: test_trainer_install).
  ferry::test::SpawnedProcess missing({FERRY_BIN, "train", "cfg/tiny.json", "--no-sync", "--trainer", "/nonexistent/ferry-train"},
                                      dir.path().string());
  BOOST_TEST(status_of(missing.wait(60s)) == 255);
}

// With the project's daemon linked (a `ferry sync` left it), `ferry train` rides it: the daemon
// pushes, the run's events come back on the project socket, the daemon pulls the outputs, and
// no SSH login is made.
BOOST_AUTO_TEST_CASE(train_riding_the_daemon) {
  ferry::test::SshdOptions logins;
  logins.log_level = "INFO";
  SshdFixture sshd(logins);
  sshd.trust_host_key();
  ferry::test::TempDir dir("ferry-train-riding");
  write_tiny_project(dir.path(), sshd);
  ::unsetenv("FERRY_NO_DAEMON");
  const std::string ferry_in = "'" FERRY_BIN "' --project '" + dir.path().string() + "' ";
  ferry::test::run_command(ferry_in + "sync >/dev/null 2>&1");
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (ferry::test::run_command(ferry_in + "daemon status --json || true").find("\"linked\":true") == std::string::npos) {
    BOOST_REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "no daemon linked after the first sync");
    std::this_thread::sleep_for(20ms);
  }
  ferry::test::write_file(dir / "cfg" / "note.txt", "pushed by the daemon\n");  // the training's push takes it
  const int before = sshd.accepted_logins();
  ferry::test::SpawnedProcess train({FERRY_BIN, "train", "cfg/tiny.json", "--json", "--trainer", FERRY_TRAIN_BIN}, dir.path().string());
  const auto kinds = event_kinds(train);
  BOOST_TEST_REQUIRE(status_of(train.wait(60s)) == 0);
  BOOST_TEST_REQUIRE(!kinds.empty());
  BOOST_TEST(kinds.front() == "start");
  BOOST_TEST(kinds.back() == "done");
  BOOST_TEST(ferry::test::read_file(sshd.home() / "proj" / "cfg" / "note.txt") == "pushed by the daemon\n");
  BOOST_TEST(ferry::test::read_file(dir / "cfg" / "out" / "plot.svg") ==
             ferry::test::read_file(sshd.home() / "proj" / "cfg" / "out" / "plot.svg"));
  BOOST_TEST(fs::is_regular_file(dir / "cfg" / "out" / "checkpoints" / "ckpt-0000000020.ferry"));
  BOOST_TEST(sshd.accepted_logins() == before, sshd.log());
  ferry::test::run_command(ferry_in + "daemon stop >/dev/null 2>&1");
}
