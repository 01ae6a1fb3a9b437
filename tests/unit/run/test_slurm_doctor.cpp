// slurm_doctor: the login node's probe (ferry.json's env exported as quoted words) and what
// `ferry doctor` makes of its output: missing commands, the partition asked for, the default one.
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
