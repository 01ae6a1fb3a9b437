// ferry-train under the launchers users have: torchrun's variables (what `ferry train --hosts`
// sets too), Slurm's srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, the node list's first
// host as the rendezvous), torchrun's winning where both are set, bad values named.
#define BOOST_TEST_MODULE launcher_env
#include <boost/test/unit_test.hpp>

#include <map>

#include "remote-runtime/train/launcher_env.hpp"

using namespace ferry::train;

namespace {

GetEnv from(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace

BOOST_AUTO_TEST_CASE(nothing_set_is_one_process) {
  auto e = launcher_env(from({}));
  BOOST_TEST_REQUIRE(e.has_value());
  BOOST_TEST(e->world_size == 1);
  BOOST_TEST(e->rank == 0);
  BOOST_TEST(e->launcher == "none");
}

BOOST_AUTO_TEST_CASE(torchrun_variables) {
  auto e = launcher_env(from({{"WORLD_SIZE", "4"}, {"RANK", "3"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
                              {"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "29600"}}));
  BOOST_TEST_REQUIRE(e.has_value());
  BOOST_TEST(e->world_size == 4);
  BOOST_TEST(e->rank == 3);
  BOOST_TEST(e->local_rank == 1);
  BOOST_TEST(e->local_world_size == 2);
  BOOST_TEST(e->master_addr == "10.0.0.7");
  BOOST_TEST(e->master_port == 29600);
  BOOST_TEST(e->launcher == "torchrun");
}

BOOST_AUTO_TEST_CASE(slurm_srun_variables) {
  auto e = launcher_env(from({{"SLURM_NTASKS", "8"}, {"SLURM_PROCID", "5"}, {"SLURM_LOCALID", "1"},
                              {"SLURM_NTASKS_PER_NODE", "4(x2)"}, {"SLURM_JOB_NODELIST", "gpu[07-08],gpu11"}}));
  BOOST_TEST_REQUIRE(e.has_value());
  BOOST_TEST(e->launcher == "slurm");
  BOOST_TEST(e->world_size == 8);
  BOOST_TEST(e->rank == 5);
  BOOST_TEST(e->local_rank == 1);
  BOOST_TEST(e->master_addr == "gpu07");
  BOOST_TEST(e->master_port == 29500);
  // MASTER_ADDR/PORT, exported in the sbatch script, win over the node list.
  auto m = launcher_env(from({{"SLURM_NTASKS", "2"}, {"SLURM_PROCID", "0"}, {"SLURM_JOB_NODELIST", "a,b"},
                              {"MASTER_ADDR", "10.1.2.3"}, {"MASTER_PORT", "12345"}}));
  BOOST_TEST_REQUIRE(m.has_value());
  BOOST_TEST(m->master_addr == "10.1.2.3");
  BOOST_TEST(m->master_port == 12345);
}

BOOST_AUTO_TEST_CASE(torchrun_wins_over_slurm_and_bad_values_are_named) {
  auto e = launcher_env(from({{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"SLURM_NTASKS", "8"}, {"SLURM_PROCID", "5"}}));
  BOOST_TEST_REQUIRE(e.has_value());
  BOOST_TEST(e->launcher == "torchrun");
  BOOST_TEST(e->rank == 1);
  auto bad = launcher_env(from({{"WORLD_SIZE", "2"}, {"RANK", "2"}}));
  BOOST_TEST_REQUIRE(!bad.has_value());
  BOOST_TEST(bad.error().find("RANK must be an integer in [0, 1]") != std::string::npos);
  auto bad_slurm = launcher_env(from({{"SLURM_NTASKS", "x"}, {"SLURM_PROCID", "0"}}));
  BOOST_TEST_REQUIRE(!bad_slurm.has_value());
  BOOST_TEST(bad_slurm.error().find("SLURM_NTASKS") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(first_host_of_a_node_list) {
  BOOST_TEST(first_slurm_host("node1") == "node1");
  BOOST_TEST(first_slurm_host("a,b,c") == "a");
  BOOST_TEST(first_slurm_host("gpu[03-05,09],cpu1") == "gpu03");
  BOOST_TEST(first_slurm_host("rack[2-3]-n[1-4]") == "rack2-n1");
}
