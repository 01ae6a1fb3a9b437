// `ferry cost`, `ferry cost catalog` and the cost column of `ferry runs`, run as the real
// executables (ferry and the local sandbox's ferry-agent) in temp dirs.
#define BOOST_TEST_MODULE cost_cli
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.hpp"

using ferry::test::TempDir;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Run {
  int status = -1;
  std::string out, err;
};

struct Sandbox {
  TempDir dir{"ferry-cost-cli"};
  fs::path root = dir / "proj";

  explicit Sandbox(const std::string& ferry_json = R"({"name": "cost-cli", "host": "local"})") {
    ferry::test::write_file(root / "ferry.json", ferry_json);
    // Its own config dir, in which the project is trusted (docs/security.md), as after `ferry init`.
    ferry::test::write_file(dir / "config" / "ferry" / "trust" / "folders.json",
                            "{\"folders\": [\"" + root.string() + "\"]}");
  }
  Run ferry(const std::string& args) const {
    const fs::path out = dir / "out", err = dir / "err";
    const std::string cmd = "cd '" + root.string() + "' && HOME='" + dir.path().string() + "' XDG_CONFIG_HOME='" +
                            (dir / "config").string() + "' XDG_CACHE_HOME='" + (dir / "cache").string() +
                            "' FERRY_AGENT='" FERRY_AGENT_PATH "' '" FERRY_BIN "' " + args + " </dev/null >'" +
                            out.string() + "' 2>'" + err.string() + "'";
    const int rc = std::system(cmd.c_str());
    return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ferry::test::read_file(out), ferry::test::read_file(err)};
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(the_p3_2xlarge_example_exactly) {
  Sandbox s;
  Run r = s.ferry("cost --instance p3.2xlarge --hours 20");
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.err);
  BOOST_TEST(r.out ==
             "aws p3.2xlarge (1x V100, 16 GiB each) for 20 h\n"
             "  on demand      $3.06/h      $61.20\n"
             "  spot           $1.02/h      $20.40  (66.7 % saved)\n");
  Run own = s.ferry("cost --price 3.06 --spot-price 1.02 --hours 20 --json");
  BOOST_REQUIRE_MESSAGE(own.status == 0, own.err);
  json j = json::parse(own.out);
  BOOST_TEST(j[0]["onDemandUsd"].get<double>() == 61.2);
  BOOST_TEST(j[0]["spotUsd"].get<double>() == 20.4);
  BOOST_TEST(j[0]["spotSavedPercent"].get<double>() == 66.7);
}

BOOST_AUTO_TEST_CASE(bad_input_says_how_to_fix_it) {
  Sandbox s;
  Run none = s.ferry("cost --hours 3");
  BOOST_TEST(none.status == 2);
  BOOST_TEST(none.err.find("--gpu NAME, --instance TYPE or --price") != std::string::npos, none.err);
  Run unknown = s.ferry("cost --gpu B200");
  BOOST_TEST(unknown.status == 2);
  BOOST_TEST(unknown.err.find("ferry cost catalog") != std::string::npos, unknown.err);
  Run hours = s.ferry("cost --gpu T4 --hours soon");
  BOOST_TEST(hours.status == 2);
  BOOST_TEST(hours.err.find("90m") != std::string::npos, hours.err);
}

BOOST_AUTO_TEST_CASE(catalog_table_with_project_overrides) {
  Sandbox s(R"({"name": "cost-cli", "host": "local", "price": {"instance": "my-box"},
    "gpuCatalog": [{"provider": "me", "instance": "my-box", "gpu": "RTX 4090", "gpuMemoryGiB": 24,
                    "onDemandUsdPerHour": 0.5, "source": "invoice 42", "date": "2026-11-01"}]})");
  Run r = s.ferry("cost catalog");
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.err);
  BOOST_TEST(r.out.starts_with("PROVIDER"));
  for (const char* g : {"T4", "V100", "A10G", "L4", "A100 40GB", "A100 80GB", "H100 80GB", "H200 141GB", "RTX 4090"})
    BOOST_TEST(r.out.find(g) != std::string::npos, g);
  BOOST_TEST(r.out.find("invoice 42 (ferry.json)") != std::string::npos);
  // No selector: the project's own price.
  Run own = s.ferry("cost --hours 10");
  BOOST_REQUIRE_MESSAGE(own.status == 0, own.err);
  BOOST_TEST(own.out.find("me my-box") != std::string::npos, own.out);
  BOOST_TEST(own.out.find("$5.00") != std::string::npos, own.out);
}

BOOST_AUTO_TEST_CASE(runs_show_each_runs_cost_at_the_host_price) {
  // $3600/h is a dollar a second: a run of at least 0.2 s costs at least $0.20.
  Sandbox s(R"({"name": "cost-cli", "host": "local", "price": {"usdPerHour": 3600}})");
  Run run = s.ferry("run -- sh -c 'sleep 0.2'");
  BOOST_REQUIRE_MESSAGE(run.status == 0, run.err);
  Run runs = s.ferry("runs --json");
  BOOST_REQUIRE_MESSAGE(runs.status == 0, runs.err);
  json list = json::parse(runs.out);
  BOOST_REQUIRE(list.size() == 1u);
  BOOST_TEST(list[0]["usdPerHour"].get<double>() == 3600.0);
  BOOST_TEST(list[0]["costUsd"].get<double>() >= 0.20);
  BOOST_TEST(list[0]["costUsd"].get<double>() < 60.0);
  Run table = s.ferry("runs");
  BOOST_TEST(table.out.find("COST") != std::string::npos, table.out);
  BOOST_TEST(table.err.find("$3600.00/h") != std::string::npos, table.err);
}

BOOST_AUTO_TEST_CASE(advise_from_events_and_by_hand) {
  Sandbox s;
  ferry::test::write_file(s.dir / "events.jsonl",
                          R"({"event":"start","total_steps":90000,"step":0})" "\n"
                          R"({"event":"step","step":100,"step_time_s":0.1,"gpus":[{"index":0,"mem_used_bytes":5368709120,"mem_total_bytes":8589934592}]})" "\n");
  Run r = s.ferry("advise '" + (s.dir / "events.jsonl").string() + "'");
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.err);
  BOOST_TEST(r.out.find("cheapest: ") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("is no longer enough: the run takes 2.5 h") != std::string::npos, r.out);  // the 8 GiB GPU it ran on
  Run j = s.ferry("advise --peak-mem 60 --step-time 1 --steps 3600 --json");
  BOOST_REQUIRE_MESSAGE(j.status == 0, j.err);
  json a = json::parse(j.out);
  BOOST_TEST(a["hours"].get<double>() == 1.1);
  for (const auto& f : a["fits"]) BOOST_TEST(f["offer"]["gpuMemoryGiB"].get<double>() >= 72.0);
  Run bad = s.ferry("advise");
  BOOST_TEST(bad.status == 2);
  BOOST_TEST(bad.err.find("--json > events.jsonl") != std::string::npos, bad.err);
}
