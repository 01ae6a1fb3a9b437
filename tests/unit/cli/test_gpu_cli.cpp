// `ferry gpu` as the real executable against the local sandbox's real agent: no driver here is
// "no NVIDIA GPU visible" with exit 0 and the /proc half still shown; with the stand-in nvidia-smi the
// table lists GPUs and processes, and a process of a ferry run carries that run's id; --watch
// --count N prints N samples.
#define BOOST_TEST_MODULE gpu_cli
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using ferry::test::TempDir;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Run {
  int status = -1;
  std::string out, err;
};

struct Sandbox {
  TempDir dir{"ferry-gpu-cli"};
  fs::path root = dir / "proj";
  Sandbox() { ferry::test::write_file(root / "ferry.json", R"({"name": "gpu-cli", "host": "local"})"); }
  ~Sandbox() { ferry::test::write_file(dir / "go", ""); }  // ends the test run (its loop waits for this file)
  Run ferry(const std::string& args, const std::string& env = "") const {
    const fs::path out = dir / "out", err = dir / "err";
    const std::string cmd = "cd '" + root.string() + "' && " + env + " XDG_CACHE_HOME='" + (dir / "cache").string() +
                            "' FERRY_AGENT='" FERRY_AGENT_PATH "' '" FERRY_BIN "' " + args + " </dev/null >'" +
                            out.string() + "' 2>'" + err.string() + "'";
    const int rc = std::system(cmd.c_str());
    return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ferry::test::read_file(out), ferry::test::read_file(err)};
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(no_driver_is_exit_zero_with_the_host_half) {
  Sandbox s;
  Run r = s.ferry("gpu", "FERRY_NVIDIA_SMI=/nonexistent/nvidia-smi");
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.err);
  BOOST_TEST(r.out.starts_with("no NVIDIA GPU visible on local"), r.out);
  BOOST_TEST(r.out.find("CPU ") != std::string::npos);
  BOOST_TEST(r.out.find("DISK read") != std::string::npos);
  Run j = s.ferry("gpu --json", "FERRY_NVIDIA_SMI=/nonexistent/nvidia-smi");
  BOOST_REQUIRE_MESSAGE(j.status == 0, j.err);
  json status = json::parse(j.out);
  BOOST_TEST(!status["available"].get<bool>());
  BOOST_TEST(status["host"]["cpu"]["perCore"].size() > 0u);
}

BOOST_AUTO_TEST_CASE(gpus_processes_and_the_run_they_belong_to) {
  Sandbox s;
  const fs::path go = s.dir / "go";
  // Ends when the test writes `go`, or when the sandbox is gone (a failed test): never outlives it.
  Run started = s.ferry("run -d -- sh -c 'while [ ! -e \"" + go.string() + "\" ] && [ -d \"" + s.dir.path().string() +
                        "\" ]; do sleep 0.05; done'");
  BOOST_REQUIRE_MESSAGE(started.status == 0, started.err);
  const std::string id = started.out.substr(0, started.out.find('\n'));
  Run runs = s.ferry("runs --json");
  json list = json::parse(runs.out);
  BOOST_REQUIRE(list.size() == 1u);
  const long long pid = list[0]["pid"].get<long long>();
  const std::string env = "FERRY_NVIDIA_SMI='" FERRY_FAKE_NVIDIA_SMI "' FAKE_GPU_PID=" + std::to_string(pid);
  Run j = s.ferry("gpu --json", env);
  BOOST_REQUIRE_MESSAGE(j.status == 0, j.err);
  json status = json::parse(j.out);
  BOOST_TEST(status["available"].get<bool>());
  const json& procs = status["gpus"][0]["processes"];
  BOOST_REQUIRE(procs.size() == 2u);
  BOOST_TEST(procs[0]["pid"] == pid);
  BOOST_TEST(procs[0]["runId"] == id);
  BOOST_TEST(procs[0]["command"].get<std::string>().starts_with("sh -c while"));
  BOOST_TEST(!procs[1].contains("runId"));  // pid 1 is nobody's run
  Run table = s.ferry("gpu", env);
  BOOST_TEST(table.out.find("Fake H200") != std::string::npos, table.out);
  BOOST_TEST(table.out.find(id) != std::string::npos, table.out);
  Run watch = s.ferry("gpu --watch --count 2 --interval 0.2 --json", env);
  BOOST_REQUIRE_MESSAGE(watch.status == 0, watch.err);
  BOOST_TEST(std::count(watch.out.begin(), watch.out.end(), '\n') == 2);
  ferry::test::write_file(go, "");
}

BOOST_AUTO_TEST_CASE(spot_file_notice_stops_a_training_run_started_by_ferry_run) {
  Sandbox s;
  // A stand-in named ferry-train that "checkpoints" on SIGTERM (the real trainer's checkpoint on
  // SIGTERM is tested in tests/unit/train); synced to the box by ferry run.
  const fs::path checkpoint = s.dir / "checkpoint";
  ferry::test::write_file(s.root / "bin" / "ferry-train", "#!/bin/sh\ntrap 'echo saved > \"" + checkpoint.string() +
                                                              "\"; exit 143' TERM\nwhile :; do sleep 0.05; done\n");
  fs::permissions(s.root / "bin" / "ferry-train", fs::perms::owner_all);
  Run started = s.ferry("run -d -- bin/ferry-train cfg.json");
  BOOST_REQUIRE_MESSAGE(started.status == 0, started.err);
  const fs::path notice = s.dir / "notice";
  Run watch = s.ferry("spot '" + notice.string() + "' --poll 0.2");
  BOOST_REQUIRE_MESSAGE(watch.status == 0, watch.err);
  BOOST_TEST(watch.out.find("watching for spot interruptions") != std::string::npos, watch.out);
  ferry::test::write_file(notice, "reclaimed");
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(checkpoint); }, std::chrono::seconds(20)));
  Run status = s.ferry("spot --status --json");
  BOOST_REQUIRE_MESSAGE(status.status == 0, status.err);
  json j = json::parse(status.out);
  BOOST_TEST(!j["watching"].get<bool>());
  BOOST_TEST(j["notice"]["runs"][0] == started.out.substr(0, started.out.find('\n')));
  Run bad = s.ferry("spot azure");
  BOOST_TEST(bad.status == 2);
}
