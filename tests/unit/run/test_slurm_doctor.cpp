// slurm_doctor: the login node's probe (ferry.json's env exported as quoted words) and what
// `ferry doctor` makes of its output: missing commands, the partition asked for, the default one;
// the node probe's script (every ferry.json value a quoted word) and what a compute node's answer
// means: the mapping roots and ~/.cache/ferry seen, not seen, or not checked.
#define BOOST_TEST_MODULE slurm_doctor
#include <boost/test/unit_test.hpp>

#include "helper/run/slurm_doctor.hpp"

using namespace ferry::run;
using ferry::protocol::SlurmJobOptions;

BOOST_AUTO_TEST_CASE(the_probe_quotes_the_env) {
  const std::string s = slurm_probe_script({{"SLURM_CONF", "/etc/x y/slurm.conf"}, {"EVIL", "$(rm -rf ~)"}, {"1BAD", "x"}});
  BOOST_TEST(s.find("export SLURM_CONF='/etc/x y/slurm.conf'\n") != std::string::npos, s);
  BOOST_TEST(s.find("export EVIL='$(rm -rf ~)'\n") != std::string::npos, s);
  BOOST_TEST(s.find("1BAD") == std::string::npos, s);
}

BOOST_AUTO_TEST_CASE(what_the_doctor_says) {
  const std::string up = "missing=\nversion=slurm 22.05.8\npartitions=main*|up|2;second|up|1;\n";
  SlurmJobOptions o;
  auto c = slurm_check_of(up, o);
  BOOST_TEST(c.status == "pass");
  BOOST_TEST(c.detail == "slurm 22.05.8, partition main up with 2 node(s)");
  o.partition = "second";
  BOOST_TEST(slurm_check_of(up, o).detail == "slurm 22.05.8, partition second up with 1 node(s)");
  o.partition = "gpu";
  c = slurm_check_of(up, o);
  BOOST_TEST(c.status == "fail");
  BOOST_TEST(c.detail.find("no partition \"gpu\" (there are: main, second)") != std::string::npos, c.detail);
  BOOST_TEST(!c.fix.empty());
  c = slurm_check_of("missing= sbatch squeue\nversion=\npartitions=\n", SlurmJobOptions{});
  BOOST_TEST(c.status == "fail");
  BOOST_TEST(c.detail == "the login node has no sbatch squeue on PATH");
  BOOST_TEST(c.fix.find("module load slurm") != std::string::npos);
  o.partition = "main";
  c = slurm_check_of("missing=\nversion=slurm 22.05.8\npartitions=main|down|2;\n", o);
  BOOST_TEST(c.status == "warn");
  c = slurm_check_of("missing=\nversion=slurm 22.05.8\npartitions=slurm_load_partitions: Unable to contact slurm controller;\n", SlurmJobOptions{});
  BOOST_TEST(c.status == "fail");
  BOOST_TEST(c.detail.find("lists no partition: slurm_load_partitions: Unable to contact") != std::string::npos, c.detail);
}

BOOST_AUTO_TEST_CASE(the_node_probe_quotes_every_value) {
  SlurmJobOptions o;
  o.partition = "gpu'; rm -rf ~; '";
  o.account = "proj 1";
  o.qos = "$(id)";
  const auto paths = node_probe_paths({"~/my proj", "/scratch/$(x)/p", "~/my proj"});
  BOOST_TEST(paths == (std::vector<std::string>{"~/my proj", "/scratch/$(x)/p", "~/.cache/ferry"}), "duplicates go, the cache comes last");
  const std::string s = slurm_node_probe_script({{"SLURM_CONF", "/a b/slurm.conf"}}, o, paths, "0123abcd", 15);
  BOOST_TEST(s.find("export SLURM_CONF='/a b/slurm.conf'\n") != std::string::npos, s);
  BOOST_TEST(s.find("R1=\"$HOME\"/'my proj';") != std::string::npos, s);
  BOOST_TEST(s.find("R2='/scratch/$(x)/p';") != std::string::npos, s);
  BOOST_TEST(s.find("R3=\"$HOME\"/'.cache/ferry';") != std::string::npos, s);
  BOOST_TEST(s.find("N='0123abcd'") != std::string::npos, s);
  BOOST_TEST(s.find(R"('--partition=gpu'\''; rm -rf ~; '\''')") != std::string::npos, s);
  BOOST_TEST(s.find("'--account=proj 1'") != std::string::npos, s);
  BOOST_TEST(s.find("'--qos=$(id)'") != std::string::npos, s);
  BOOST_TEST(s.find("'--immediate=15'") != std::string::npos, s);
  BOOST_TEST(s.find("--constraint=") == std::string::npos, s);  // not set: not asked
  BOOST_TEST(s.find("\"$F1\" \"$F2\" \"$F3\" </dev/null") != std::string::npos, s);
  BOOST_TEST(s.find("trap 'rm -f -- \"$F1\" \"$F2\" \"$F3\" 2>/dev/null' EXIT") != std::string::npos, s);
}

namespace {
const std::vector<std::string> kPaths{"~/proj", "~/.cache/ferry"};
const std::string kWritten = "root1=/home/u/proj\ndir1=/home/u/proj\nroot2=/home/u/.cache/ferry\ndir2=/home/u/.cache/ferry\n";
}  // namespace

BOOST_AUTO_TEST_CASE(a_node_that_reads_every_marker_passes) {
  auto c = slurm_node_check_of(kWritten + "node=n1\nseen1=0123abcd\nseen2=0123abcd\nsrun_status=0\nsrun_err=\n", kPaths, "0123abcd", 15);
  BOOST_TEST(c.name == "slurm nodes");
  BOOST_TEST(c.status == "pass");
  BOOST_TEST(c.detail == "mapping root ~/proj is visible on compute node n1, and so is ~/.cache/ferry");
  BOOST_TEST(c.fix.empty());
  // Before the first sync: the root's parent stood for it.
  c = slurm_node_check_of("root1=/home/u/proj\ndir1=/home/u\nroot2=/home/u/.cache/ferry\ndir2=/home/u/.cache/ferry\n"
                          "node=n2\nseen1=0123abcd\nseen2=0123abcd\nsrun_status=0\n",
                          kPaths, "0123abcd", 15);
  BOOST_TEST(c.status == "pass");
  BOOST_TEST(c.detail == "mapping root ~/proj is visible on compute node n2, and so is ~/.cache/ferry "
                         "(~/proj is not there yet: its parent /home/u was checked)");
  c = slurm_node_check_of("root1=/a\ndir1=/a\nroot2=/b\ndir2=/b\nroot3=/c\ndir3=/c\nnode=n1\nseen1=x\nseen2=x\nseen3=x\n",
                          {"/a", "/b", "~/.cache/ferry"}, "x", 15);
  BOOST_TEST(c.detail == "mapping roots /a and /b are visible on compute node n1, and so is ~/.cache/ferry");
}

BOOST_AUTO_TEST_CASE(a_node_that_misses_a_marker_fails_saying_what_to_do) {
  // An old marker or none: only this run's nonce counts.
  auto c = slurm_node_check_of(kWritten + "node=n1\nseen1=ffffffff\nseen2=0123abcd\nsrun_status=0\n", kPaths, "0123abcd", 15);
  BOOST_TEST(c.status == "fail");
  BOOST_TEST(c.detail == "mapping root ~/proj (/home/u/proj) is not visible on compute node n1: a file written there on the "
                         "login node is not there on the node");
  BOOST_TEST(c.fix.find("such as $HOME or /scratch") != std::string::npos, c.fix);
  BOOST_TEST(c.fix.find("home directory") == std::string::npos, c.fix);
  c = slurm_node_check_of(kWritten + "node=n1\nseen1=\nseen2=\nsrun_status=0\n", kPaths, "0123abcd", 15);
  BOOST_TEST(c.status == "fail");
  BOOST_TEST(c.detail.starts_with("mapping root ~/proj (/home/u/proj) and ~/.cache/ferry are not visible on compute node n1"), c.detail);
  BOOST_TEST(c.fix.find("such as $HOME or /scratch") != std::string::npos, c.fix);
  BOOST_TEST(c.fix.find("share the login node's home directory") != std::string::npos, c.fix);
}

BOOST_AUTO_TEST_CASE(no_probe_on_a_node_is_not_checked) {
  // srun --immediate gave up: the queue is busy.
  auto c = slurm_node_check_of(kWritten + "srun_status=1\nsrun_err=srun: job 3 queued and waiting for resources srun: error: "
                                          "Unable to allocate resources: Requested nodes are busy \n",
                               kPaths, "0123abcd", 15);
  BOOST_TEST(c.status == "warn");
  BOOST_TEST(c.detail == "not checked: the queue did not start a probe within 15 s");
  BOOST_TEST(!c.fix.empty());
  c = slurm_node_check_of(kWritten + "srun_status=124\nsrun_err=\n", kPaths, "0123abcd", 20);  // timeout(1) ended it
  BOOST_TEST(c.detail == "not checked: the queue did not start a probe within 20 s");
  c = slurm_node_check_of(kWritten + "srun_status=1\nsrun_err=srun: error: Unable to allocate resources: Invalid account or "
                                     "account/partition combination specified \n",
                          kPaths, "0123abcd", 15);
  BOOST_TEST(c.status == "warn");
  BOOST_TEST(c.detail.starts_with("not checked: srun did not start a probe (exit 1): srun: error: Unable to allocate resources: Invalid account"),
             c.detail);
  BOOST_TEST(c.fix.find("account") != std::string::npos, c.fix);
  c = slurm_node_check_of(kWritten + "srun_status=127\nsrun_err=sh: 1: srun: not found \n", kPaths, "0123abcd", 15);
  BOOST_TEST(c.detail == "not checked: srun did not start a probe (exit 127): sh: 1: srun: not found ");
  // A marker that could not be written: that path is not checked, the rest would be.
  c = slurm_node_check_of("root1=/ro/proj\ndir1=!/ro\nroot2=/home/u/.cache/ferry\ndir2=/home/u/.cache/ferry\n"
                          "node=n1\nseen1=\nseen2=0123abcd\nsrun_status=0\n",
                          kPaths, "0123abcd", 15);
  BOOST_TEST(c.status == "warn");
  BOOST_TEST(c.detail == "not checked: no marker file could be written for ~/proj (in /ro)");
  // ... but a path the node did not see still fails.
  c = slurm_node_check_of("root1=/ro/proj\ndir1=!/ro\nroot2=/home/u/.cache/ferry\ndir2=/home/u/.cache/ferry\n"
                          "node=n1\nseen1=\nseen2=\nsrun_status=0\n",
                          kPaths, "0123abcd", 15);
  BOOST_TEST(c.status == "fail");
  BOOST_TEST(c.detail.starts_with("~/.cache/ferry is not visible on compute node n1"), c.detail);
}
