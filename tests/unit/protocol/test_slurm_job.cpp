// slurm_job: ferry.json's `slurm` block read and refused field by field, the sbatch arguments and
// the batch script made from it (no shell anywhere: arguments and a JSON argv), the script read
// back on the node, scontrol's line, and the exit status a job's end gives.
#define BOOST_TEST_MODULE slurm_job
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "protocol/slurm_job.hpp"

using namespace ferry::protocol;
using json = nlohmann::json;

BOOST_AUTO_TEST_CASE(options_are_read_and_written_back) {
  const json j = json::parse(R"({"partition": "gpu", "account": "proj1", "qos": "high", "time": "2:00:00",
                                 "constraint": "a100", "nodes": 2, "gpusPerNode": 4, "cpusPerTask": 8,
                                 "sbatchOptions": ["--mem=32G", "--exclusive"]})");
  auto o = slurm_options_from_json(j);
  BOOST_REQUIRE_MESSAGE(o.has_value(), o.error());
  BOOST_TEST(o->partition == "gpu");
  BOOST_TEST(o->nodes == 2);
  BOOST_TEST(o->gpus_per_node == 4);
  BOOST_TEST(o->sbatch_options.size() == 2u);
  BOOST_TEST(to_json(*o) == j);
  BOOST_TEST(slurm_options_from_json(json::object())->nodes == 1);
}

BOOST_AUTO_TEST_CASE(bad_options_are_refused_naming_the_field) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"nodes": 0})", "slurm.nodes"},
      {R"({"nodes": "2"})", "slurm.nodes"},
      {R"({"partition": 3})", "slurm.partition"},
      {R"({"time": "1:00\n#SBATCH --x"})", "slurm.time must be one line"},
      {R"({"sbatchOptions": ["mem=1G"]})", "slurm.sbatchOptions"},
      {R"({"sbatchOptions": "--mem=1G"})", "slurm.sbatchOptions"},
      {R"({"gpus": 1})", "slurm.gpus is not a setting"},
      {R"([1])", "slurm must be an object"},
  };
  for (auto [text, expected] : cases) {
    auto o = slurm_options_from_json(json::parse(text));
    BOOST_REQUIRE_MESSAGE(!o.has_value(), text);
    BOOST_TEST(o.error().find(expected) != std::string::npos, text << " -> " << o.error());
  }
}

BOOST_AUTO_TEST_CASE(sbatch_arguments_hold_each_option_as_one_argument) {
  SlurmJobOptions o;
  o.partition = "gpu";
  o.time = "30";
  o.gpus_per_node = 2;
  o.sbatch_options = {"--mem=32G"};
  auto a = sbatch_arguments(o, "ferry-run1", "/s/job.out", "/s/job.err", "/home/u/proj dir");
  const std::vector<std::string> expected{"--parsable", "--job-name=ferry-run1", "--output=/s/job.out", "--error=/s/job.err",
                                          "--chdir=/home/u/proj dir", "--export=ALL", "--nodes=1", "--partition=gpu",
                                          "--time=30", "--gpus-per-node=2", "--mem=32G"};
  BOOST_TEST(a == expected, boost::test_tools::per_element());
  o.nodes = 3;
  a = sbatch_arguments(o, "n", "o", "e", "c");
  BOOST_TEST((std::find(a.begin(), a.end(), "--ntasks-per-node=1") != a.end()));
}

BOOST_AUTO_TEST_CASE(the_batch_script_is_the_agent_and_a_json_argv) {
  SlurmJobOptions o;
  const std::vector<std::string> argv{"python3", "train.py", "--lr", "$(rm -rf ~)", "it's"};
  const std::string script = batch_script("/home/u/.cache/ferry/agent/ferry-agent-x86_64", argv, o, "/s/slurm-exit");
  BOOST_TEST(script.starts_with("#!/home/u/.cache/ferry/agent/ferry-agent-x86_64 --slurm-step\n"));
  auto step = slurm_step_of(script);
  BOOST_REQUIRE(step.has_value());
  BOOST_TEST(step->argv == argv, boost::test_tools::per_element());
  BOOST_TEST(step->exit_file == "/s/slurm-exit");
  // More than one node: srun starts it on each.
  o.nodes = 2;
  step = slurm_step_of(batch_script("/a", argv, o, "/x"));
  BOOST_REQUIRE(step.has_value());
  BOOST_TEST(step->argv.size() == argv.size() + 3);
  BOOST_TEST(step->argv[0] == "srun");
  BOOST_TEST(step->argv[2] == "--");
  BOOST_TEST(!slurm_step_of("#!/bin/sh\necho hi\n").has_value());
  BOOST_TEST(!slurm_step_of("no shebang").has_value());
}

BOOST_AUTO_TEST_CASE(scontrol_lines_and_exit_statuses) {
  auto f = parse_scontrol_line("JobId=12 JobName=ferry-x UserId=root(0) JobState=FAILED Reason=NonZeroExitCode ExitCode=3:0 RunTime=00:00:01\n");
  BOOST_TEST(f["JobId"] == "12");
  BOOST_TEST(f["JobState"] == "FAILED");
  BOOST_TEST(f["ExitCode"] == "3:0");
  BOOST_TEST(f["RunTime"] == "00:00:01");
  BOOST_TEST(slurm_exit_status("COMPLETED", "0:0") == 0);
  BOOST_TEST(slurm_exit_status("FAILED", "3:0") == 3);
  BOOST_TEST(slurm_exit_status("CANCELLED", "0:15") == 143);
  BOOST_TEST(slurm_exit_status("TIMEOUT", "0:0") == 1);
  BOOST_TEST(slurm_exit_status("NODE_FAIL", "") == 1);
  for (const char* s : {"COMPLETED", "FAILED", "CANCELLED", "CANCELLED+", "TIMEOUT", "PREEMPTED", "OUT_OF_MEMORY"})
    BOOST_TEST(slurm_state_is_final(s), s);
  for (const char* s : {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", ""})
    BOOST_TEST(!slurm_state_is_final(s), s);
}

BOOST_AUTO_TEST_CASE(wait_lines_are_written_and_read_back) {
  auto pending = parse_slurm_wait_line("ferry: " + slurm_pending_line("12", "Resources") + "\n");
  BOOST_REQUIRE(pending.has_value());
  BOOST_TEST(pending->job_id == "12");
  BOOST_TEST(!pending->running);
  BOOST_TEST(pending->detail == "Resources");
  auto running = parse_slurm_wait_line("ferry: " + slurm_running_line("12", "n[1-2]"));
  BOOST_REQUIRE(running.has_value());
  BOOST_TEST(running->running);
  BOOST_TEST(running->detail == "n[1-2]");
  auto queued = parse_slurm_wait_line("ferry: " + slurm_pending_line("12", "Priority", 2));
  BOOST_REQUIRE(queued.has_value());
  BOOST_TEST(queued->detail == "Priority");
  BOOST_TEST(queued->ahead == 2);
  BOOST_TEST(slurm_pending_line("12", "Priority", 1) == "job 12 pending (Priority), 1 job ahead");
  BOOST_TEST(pending->ahead == -1);
  for (const char* other : {"ferry: job 12 cancelled", "job 12 pending (Resources)", "ferry: job x pending (Resources)",
                            "ferry: job 12 pending (Resources), soon", "ferry: job 12 pending (Resources), x jobs ahead",
                            "ferry: Slurm job 12 submitted", "ferry: job 12 running on ", ""})
    BOOST_TEST(!parse_slurm_wait_line(other), other);
}

BOOST_AUTO_TEST_CASE(a_jobs_state_in_words_and_json) {
  BOOST_TEST(describe_slurm_state({"PENDING", "Resources", "", "", -1}) == "PENDING (Resources)");
  BOOST_TEST(describe_slurm_state({"PENDING", "Priority", "", "", 2}) == "PENDING (Priority, 2 ahead)");
  BOOST_TEST(describe_slurm_state({"PENDING", "None", "", "", -1}) == "PENDING");
  BOOST_TEST(describe_slurm_state({"RUNNING", "None", "n[1-2]", "58:40", -1}) == "RUNNING on n[1-2], 58:40 left");
  BOOST_TEST(describe_slurm_state({"RUNNING", "None", "n1", "UNLIMITED", -1}) == "RUNNING on n1");
  BOOST_TEST(describe_slurm_state({"TIMEOUT", "", "", "", -1}) == "TIMEOUT");
  BOOST_TEST(slurm_job_state_from_json(to_json(SlurmJobState{"PENDING", "Priority", "", "", 3}))->ahead == 3);
  SlurmJobState s{"RUNNING", "", "n1", "1:00", -1};
  auto back = slurm_job_state_from_json(to_json(s));
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST(back->nodes == "n1");
  BOOST_TEST(back->time_left == "1:00");
  BOOST_TEST(!slurm_job_state_from_json(nlohmann::json::object()));
}

BOOST_AUTO_TEST_CASE(jobs_ahead_in_the_pending_queue) {
  const auto a = pending_queue_arguments("main");
  BOOST_TEST((std::find(a.begin(), a.end(), "--sort=-p,i") != a.end()));
  BOOST_TEST(a.back() == "main");
  BOOST_TEST(pending_queue_arguments("").back() == "%i");
  BOOST_TEST(*jobs_ahead("  10\n  11\n  12\n", "12") == 2);
  BOOST_TEST(*jobs_ahead("12\n", "12") == 0);
  BOOST_TEST(!jobs_ahead("10\n11\n", "12"));
  BOOST_TEST(!jobs_ahead("", "12"));
}
