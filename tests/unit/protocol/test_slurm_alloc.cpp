// slurm_alloc: an allocation's sbatch arguments and hold script, squeue's lines read back, the srun
// that starts an agent inside a job (argv only), Slurm durations, and the slurm/* params' JSON.
#define BOOST_TEST_MODULE slurm_alloc
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "protocol/slurm_alloc.hpp"

using namespace ferry::protocol;
using json = nlohmann::json;

namespace {
bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }
}  // namespace

BOOST_AUTO_TEST_CASE(an_allocation_is_a_job_that_holds_and_writes_nothing) {
  SlurmJobOptions o;
  o.partition = "gpu";
  o.time = "1:00:00";
  o.gpus_per_node = 2;
  const auto a = allocation_sbatch_arguments(o, "ferry-alloc-proj", "/home/u/proj");
  BOOST_TEST(has(a, "--job-name=ferry-alloc-proj"));
  BOOST_TEST(has(a, "--output=/dev/null"));
  BOOST_TEST(has(a, "--error=/dev/null"));
  BOOST_TEST(has(a, "--chdir=/home/u/proj"));
  BOOST_TEST(has(a, "--partition=gpu"));
  BOOST_TEST(has(a, "--gpus-per-node=2"));
  BOOST_TEST(hold_script("/home/u/.cache/ferry/agent/ferry-agent-x") == "#!/home/u/.cache/ferry/agent/ferry-agent-x --slurm-hold\n");
}

BOOST_AUTO_TEST_CASE(job_names_keep_to_what_slurm_takes) {
  const std::string name = allocation_job_name("proj", "~/proj");
  BOOST_TEST(name.starts_with("ferry-alloc-proj-"));
  BOOST_TEST(name.size() == std::string("ferry-alloc-proj-").size() + 8);
  BOOST_TEST(name.find_first_not_of("0123456789abcdef", 17) == std::string::npos, name);
  BOOST_TEST(allocation_job_name("my proj,2|x", "~/p").starts_with("ferry-alloc-my_proj_2_x-"));
  // The same project from another checkout finds its allocation; a namesake elsewhere has its own.
  BOOST_TEST(allocation_job_name("proj", "~/proj") == name);
  BOOST_TEST(allocation_job_name("proj", "~/work/proj") != name);
  BOOST_TEST(allocation_job_name("proj", "~/proj").substr(17) == "29d91071");  // stable across builds and platforms
}

BOOST_AUTO_TEST_CASE(squeue_lines_are_read_field_by_field) {
  const auto a = squeue_arguments("ferry-alloc-p");
  BOOST_TEST(has(a, "--me"));
  BOOST_TEST(has(a, "--name=ferry-alloc-p"));
  const auto jobs = parse_squeue("12|RUNNING|None|n1|58:40|1:00:00\n13|PENDING|Resources|(null)|1:00:00|1:00:00\n"
                                 "garbage line\n\n14|PENDING|Priority||UNLIMITED|UNLIMITED");
  BOOST_REQUIRE_EQUAL(jobs.size(), 3u);
  BOOST_TEST(jobs[0].job_id == "12");
  BOOST_TEST(jobs[0].state == "RUNNING");
  BOOST_TEST(jobs[0].nodes == "n1");
  BOOST_TEST(jobs[0].time_left == "58:40");
  BOOST_TEST(jobs[0].time_limit == "1:00:00");
  BOOST_TEST(jobs[1].reason == "Resources");
  BOOST_TEST(jobs[1].nodes == "");  // (null) while it pends
  BOOST_TEST(jobs[2].job_id == "14");
  BOOST_TEST(parse_squeue("").empty());
}

BOOST_AUTO_TEST_CASE(the_agent_in_a_job_is_an_overlapping_step_with_unbuffered_stdio) {
  const auto a = srun_agent_arguments("12", "n2", "/a/ferry-agent", "/home/u/proj", "/home/u/.cache/ferry/state/job-12");
  BOOST_TEST(a.front() == "srun");
  for (const char* s : {"--jobid=12", "--overlap", "--unbuffered", "--nodes=1", "--ntasks=1", "--nodelist=n2"}) BOOST_TEST(has(a, s), s);
  const auto dashes = std::find(a.begin(), a.end(), "--");
  BOOST_REQUIRE(dashes != a.end());
  const std::vector<std::string> agent(dashes + 1, a.end());
  BOOST_TEST(agent == (std::vector<std::string>{"/a/ferry-agent", "--root", "/home/u/proj", "--state-dir",
                                                "/home/u/.cache/ferry/state/job-12", "--in-job"}),
             boost::test_tools::per_element());
  BOOST_TEST(!has(srun_agent_arguments("12", "", "/a", "/r", "/s"), "--nodelist="));
}

BOOST_AUTO_TEST_CASE(slurm_durations_in_seconds) {
  BOOST_TEST(*slurm_duration_seconds("30") == 30 * 60);
  BOOST_TEST(*slurm_duration_seconds("58:40") == 58 * 60 + 40);
  BOOST_TEST(*slurm_duration_seconds("2:00:00") == 7200);
  BOOST_TEST(*slurm_duration_seconds("1-02:03:04") == 86400 + 2 * 3600 + 3 * 60 + 4);
  BOOST_TEST(*slurm_duration_seconds("1-12") == 86400 + 12 * 3600);
  BOOST_TEST(*slurm_duration_seconds("1-12:30") == 86400 + 12 * 3600 + 30 * 60);
  for (const char* bad : {"UNLIMITED", "INVALID", "", "1:2:3:4", "-5", "a:b"}) BOOST_TEST(!slurm_duration_seconds(bad), bad);
}

BOOST_AUTO_TEST_CASE(params_travel_as_json_and_bad_ones_are_refused) {
  SlurmAllocateParams p;
  p.options.partition = "main";
  p.name = "ferry-alloc-x";
  p.cwd = "/home/u";
  p.env = {"SLURM_CONF=/etc/slurm.conf"};
  SlurmAllocateParams back;
  BOOST_REQUIRE(!from_json(to_json(p), back));
  BOOST_TEST(back.options.partition == "main");
  BOOST_TEST(back.env == p.env, boost::test_tools::per_element());
  auto err = from_json(json{{"options", {{"nodes", 0}}}, {"name", "n"}, {"cwd", "/"}}, back);
  BOOST_REQUIRE(err);
  BOOST_TEST(err->pointer == "/options");
  SlurmJobsResult r{{{"12", "RUNNING", "None", "n1", "5:00", "10:00"}}};
  SlurmJobsResult r2;
  BOOST_REQUIRE(!from_json(to_json(r), r2));
  BOOST_REQUIRE_EQUAL(r2.jobs.size(), 1u);
  BOOST_TEST(r2.jobs[0].time_left == "5:00");
}

BOOST_AUTO_TEST_CASE(a_run_in_an_allocation_is_an_srun_step_read_back_by_ferry_runs) {
  auto a = srun_step_arguments("12", "n2", false);
  for (const char* s : {"--jobid=12", "--overlap", "--unbuffered", "--disable-status", "--nodelist=n2"}) BOOST_TEST(has(a, s), s);
  BOOST_TEST(has(srun_step_arguments("12", "", true), "--pty"));
  BOOST_TEST(!has(srun_step_arguments("12", "", true), "--nodelist="));
  BOOST_TEST(a.back() == "--");
  a.insert(a.end(), {"python3", "-u", "x.py"});
  auto step = allocation_step_of(a);
  BOOST_REQUIRE(step.has_value());
  BOOST_TEST(step->job_id == "12");
  BOOST_TEST(step->argv == (std::vector<std::string>{"python3", "-u", "x.py"}), boost::test_tools::per_element());
  BOOST_TEST(!allocation_step_of({"python3", "x.py"}));
  BOOST_TEST(!allocation_step_of({"srun", "--jobid=1", "--"}));
  BOOST_TEST(!allocation_step_of({"srun", "-N2", "--", "x"}));
}
