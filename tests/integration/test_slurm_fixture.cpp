// The Slurm test cluster itself (slurm_fixture): batch scripts, their output and exit codes, srun
// over both nodes, a job pending for resources, signals through scancel, job states once
// slurmctld forgets a job, a start that fails, two clusters at once, and nothing left running
// after the cluster is gone. What later Slurm tests of ferry rely on.
#define BOOST_TEST_MODULE slurm_fixture
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "tests/integration/slurm_fixture.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ferry::test::SlurmCluster;
using ferry::test::SlurmJobState;
using ferry::test::SlurmOptions;

namespace {

// Re-checks `condition` (a Slurm client command or a file a job writes) until it holds or
// `limit` passes. Each look may fork a client, so the looks are 50 ms apart, not 1 ms.
template <class F>
bool poll_until(F condition, std::chrono::milliseconds limit = 60s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
  return true;
}

std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

// squeue's "STATE REASON" of one job, e.g. "PENDING Resources".
std::string squeue_state(const SlurmCluster& c, const std::string& id) {
  const auto r = c.run("squeue -h -j " + id + " -o '%T %r'");
  return r.out.substr(0, r.out.find('\n'));
}

std::string script(const SlurmCluster& c, const std::string& name, const std::string& body) {
  const fs::path file = c.dir() / name;
  ferry::test::write_file(file, "#!/bin/sh\n" + body);
  fs::permissions(file, fs::perms::owner_all);
  return file.string();
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_batch_script_writes_its_output_and_fails_with_its_exit_code) {
  SlurmCluster c;
  BOOST_TEST_MESSAGE("cluster " << c.cluster_name() << " up in " << c.start_ms() << " ms");
  const std::string s = script(c, "fail.sh", "echo 'line from the job'\nexit 3\n");
  const std::string id = c.submit("-o '" + (c.dir() / "out-%j.txt").string() + "' " + s);
  const SlurmJobState st = c.wait_job(id, 60s);
  BOOST_TEST(st.state == "FAILED");
  BOOST_TEST(st.exit_code == 3);
  BOOST_TEST(st.signal == 0);
  BOOST_TEST(st.source == "scontrol");
  BOOST_TEST(ferry::test::read_file(c.dir() / ("out-" + id + ".txt")) == "line from the job\n");
  // The jobcomp file has its line from the moment the job is final.
  BOOST_TEST(ferry::test::read_file(c.jobcomp_file()).find("JobId=" + id + " ") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(srun_reaches_both_nodes_and_the_second_partition_only_n2) {
  SlurmCluster c;
  const auto r = c.run("timeout 120 srun -N2 -n2 sh -c 'echo $SLURMD_NODENAME'");
  BOOST_TEST_REQUIRE(r.status == 0, r.err);
  BOOST_TEST(sorted_lines(r.out) == (std::vector<std::string>{"n1", "n2"}), boost::test_tools::per_element());
  const fs::path out = c.dir() / "second.txt";
  const std::string id = c.submit("-p " + c.second_partition() + " -o '" + out.string() + "' --wrap 'echo $SLURMD_NODENAME'");
  BOOST_TEST(c.wait_job(id, 60s).state == "COMPLETED");
  BOOST_TEST(ferry::test::read_file(out) == "n2\n");
}

BOOST_AUTO_TEST_CASE(a_job_holding_every_cpu_keeps_the_next_pending_for_resources_until_cancelled) {
  SlurmCluster c;  // 2 nodes x 2 CPUs
  const std::string big = c.submit("-n4 -o /dev/null --wrap 'sleep 600'");
  BOOST_TEST_REQUIRE(poll_until([&] { return c.job_state(big).state == "RUNNING"; }), squeue_state(c, big));
  BOOST_TEST(c.job_state(big).nodes == "n[1-2]");
  const std::string small = c.submit("-n1 -o /dev/null --wrap true");
  BOOST_TEST(poll_until([&] { return squeue_state(c, small) == "PENDING Resources"; }), squeue_state(c, small));
  BOOST_TEST(c.job_state(small).reason == "Resources");
  BOOST_TEST_REQUIRE(c.run("scancel " + big).status == 0);
  const SlurmJobState after = c.wait_job(small, 60s);
  BOOST_TEST(after.state == "COMPLETED");
  BOOST_TEST(after.exit_code == 0);
  BOOST_TEST(c.wait_job(big, 60s).state == "CANCELLED");
}

// scancel --signal reaches job steps only; the batch script (no srun inside) needs --batch.
BOOST_AUTO_TEST_CASE(scancel_signal_reaches_the_batch_script_with_batch) {
  SlurmCluster c;
  const fs::path seen = c.dir() / "signals.txt";
  const std::string s = script(c, "traps.sh",
                               "trap 'echo TERM >> \"$SEEN\"' TERM\n"
                               "trap 'echo USR1 >> \"$SEEN\"; kill $pid; exit 0' USR1\n"
                               "echo ready >> \"$SEEN\"\n"
                               "while :; do sleep 600 & pid=$!; wait $pid; done\n");
  const std::string id = c.submit("-o /dev/null --export=ALL,SEEN='" + seen.string() + "' " + s);
  BOOST_TEST_REQUIRE(poll_until([&] { return ferry::test::read_file(seen) == "ready\n"; }), c.logs());
  BOOST_TEST(c.run("scancel --signal=TERM " + id).status == 0);  // steps only: none here
  BOOST_TEST(c.run("scancel --batch --signal=TERM " + id).status == 0);
  BOOST_TEST(poll_until([&] { return ferry::test::read_file(seen) == "ready\nTERM\n"; }), ferry::test::read_file(seen));
  BOOST_TEST(c.job_state(id).state == "RUNNING");  // the trap kept it going
  BOOST_TEST(c.run("scancel --batch --signal=USR1 " + id).status == 0);
  const SlurmJobState st = c.wait_job(id, 60s);
  BOOST_TEST(st.state == "COMPLETED");
  BOOST_TEST(st.exit_code == 0);
  // One TERM line: the plain --signal=TERM, sent first, never reached the script.
  BOOST_TEST(ferry::test::read_file(seen) == "ready\nTERM\nUSR1\n");
}

BOOST_AUTO_TEST_CASE(job_state_reads_the_jobcomp_file_once_slurmctld_forgets_the_job) {
  SlurmOptions options;
  options.min_job_age_s = 2;
  SlurmCluster c(options);
  const std::string id = c.submit("-o /dev/null --wrap 'exit 7'");
  const SlurmJobState known = c.wait_job(id, 60s);
  BOOST_TEST(known.state == "FAILED");
  BOOST_TEST(known.source == "scontrol");
  // slurmctld purges finished jobs older than MinJobAge about every 10 s here.
  BOOST_TEST_REQUIRE(poll_until([&] { return c.job_state(id).source == "jobcomp"; }));
  BOOST_TEST(c.run("scontrol show job " + id).status != 0);
  const SlurmJobState forgotten = c.job_state(id);
  BOOST_TEST(forgotten.state == "FAILED");
  BOOST_TEST(forgotten.exit_code == 7);
  BOOST_TEST(forgotten.nodes == known.nodes);
}

BOOST_AUTO_TEST_CASE(a_cluster_that_cannot_start_stops_what_it_started) {
  std::string message;
  try {
    SlurmCluster c(SlurmOptions{.extra_conf = "SchedulerType=sched/no-such-plugin"});
  } catch (const std::exception& e) {
    message = e.what();
  }
  BOOST_TEST_REQUIRE(!message.empty());
  BOOST_TEST_MESSAGE(message.substr(0, message.find('\n')));
  BOOST_TEST(message.find("no-such-plugin") != std::string::npos);  // slurmctld's log says why
  BOOST_TEST(message.find("slurmctld exited while the cluster started") != std::string::npos);
  const std::string prefix = "slurm cluster in ";
  BOOST_TEST_REQUIRE(message.rfind(prefix, 0) == 0);
  const fs::path dir = message.substr(prefix.size(), message.find(" did not start") - prefix.size());
  BOOST_TEST(ferry::test::slurm_processes(dir).empty());  // munged and both slurmd stopped too
  BOOST_TEST(!fs::exists(dir));
}

BOOST_AUTO_TEST_CASE(two_clusters_run_side_by_side) {
  SlurmCluster a, b;
  BOOST_TEST(a.cluster_name() != b.cluster_name());
  for (const SlurmCluster* c : {&a, &b}) {
    BOOST_TEST(c->run("scontrol show config | grep '^ClusterName'").out.find(c->cluster_name()) != std::string::npos);
    const std::string id = c->submit("-N2 -n2 -o /dev/null --wrap 'srun true'");
    BOOST_TEST(c->wait_job(id, 60s).state == "COMPLETED");
    BOOST_TEST(id == "1");  // each cluster counts its own jobs
  }
}

BOOST_AUTO_TEST_CASE(destroying_the_cluster_leaves_no_process_behind) {
  auto c = std::make_unique<SlurmCluster>();
  const fs::path dir = c->dir();
  // A running step with a child, and an orphan that left the step's tree (linuxproc loses those).
  c->submit("-o /dev/null --wrap '(setsid sleep 601 &); sleep 600'");
  std::multiset<std::string> names;
  std::vector<pid_t> pids;
  const bool all_there = poll_until([&] {
    pids = c->processes();
    names.clear();
    for (pid_t p : pids) names.insert(ferry::test::comm_of(p));
    return names.count("munged") == 1 && names.count("slurmctld") == 1 && names.count("slurmd") == 2 &&
           names.count("slurmstepd") == 1 && names.count("sleep") == 2;
  });
  BOOST_TEST_REQUIRE(all_there, c->logs());
  const auto t0 = std::chrono::steady_clock::now();
  c.reset();
  BOOST_TEST_MESSAGE("cluster stopped in " << std::chrono::duration_cast<std::chrono::milliseconds>(
                                                  std::chrono::steady_clock::now() - t0)
                                                  .count()
                                           << " ms");
  BOOST_TEST(ferry::test::slurm_processes(dir).empty());
  for (pid_t p : pids) {
    const char state = ferry::test::state_of(p);
    BOOST_TEST((state == '\0' || state == 'Z'), "pid " << p << " (" << ferry::test::comm_of(p) << ") still " << state);
  }
  BOOST_TEST(!fs::exists(dir));
}

// A test process that dies (a crash, ctest's timeout) takes its daemons along (PR_SET_PDEATHSIG),
// not its running job steps: the next cluster's start kills those and removes the directory.
BOOST_AUTO_TEST_CASE(the_next_cluster_cleans_up_after_a_test_that_died) {
  int ready[2];
  BOOST_TEST_REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  BOOST_TEST_REQUIRE(child >= 0);
  if (child == 0) {  // the test that dies: a cluster with a running job, then SIGKILL
    ::close(ready[0]);
    try {
      SlurmCluster c;
      const std::string id = c.submit("-o /dev/null --wrap 'sleep 600'");
      if (poll_until([&] { return c.job_state(id).state == "RUNNING"; })) {
        const std::string dir = c.dir().string() + "\n";
        if (::write(ready[1], dir.data(), dir.size()) < 0) ::_exit(1);
      }
      ::pause();
    } catch (...) {
    }
    ::_exit(1);
  }
  ::close(ready[1]);
  std::string line;
  char ch;
  while (::read(ready[0], &ch, 1) == 1 && ch != '\n') line += ch;
  ::close(ready[0]);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  BOOST_TEST_REQUIRE(!line.empty());
  const fs::path dir = line;
  auto comms = [&] {
    std::multiset<std::string> names;
    for (pid_t p : ferry::test::slurm_processes(dir)) names.insert(ferry::test::comm_of(p));
    return names;
  };
  // The daemons go with the test; the step, its script and sleep stay (unless a cluster started
  // meanwhile by a test running beside this one has already cleaned them up).
  std::multiset<std::string> left;
  BOOST_TEST(poll_until([&] {
    left = comms();
    return left.count("munged") + left.count("slurmctld") + left.count("slurmd") == 0;
  }));
  std::string names;
  for (const auto& n : left) names += n + " ";
  BOOST_TEST_MESSAGE("left by the dead test: " << names);
  SlurmCluster next;
  BOOST_TEST(ferry::test::slurm_processes(dir).empty());
  BOOST_TEST(!fs::exists(dir));
}
