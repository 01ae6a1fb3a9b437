// Ranks across hosts: torchrun's node order and environment, --hosts parsing, and which failure
// is reported when one rank's death takes the others down.
#define BOOST_TEST_MODULE train_ranks
#include <boost/test/unit_test.hpp>

#include "helper/train/train_ranks.hpp"

using namespace ferry::training;

BOOST_AUTO_TEST_CASE(ranks_fill_host_by_host_with_torchrun_env) {
  auto slots = plan_ranks({"a", "b"}, 2);
  BOOST_TEST_REQUIRE(slots.size() == 4u);
  BOOST_TEST(slots[2].host == "b");
  BOOST_TEST(slots[2].rank == 2);
  BOOST_TEST(slots[2].local_rank == 0);
  auto env = rank_env(slots[3], 4, 2, {"10.0.0.1", 29511});
  BOOST_TEST(env["RANK"] == "3");
  BOOST_TEST(env["WORLD_SIZE"] == "4");
  BOOST_TEST(env["LOCAL_RANK"] == "1");
  BOOST_TEST(env["LOCAL_WORLD_SIZE"] == "2");
  BOOST_TEST(env["MASTER_ADDR"] == "10.0.0.1");
  BOOST_TEST(env["MASTER_PORT"] == "29511");
}

BOOST_AUTO_TEST_CASE(hosts_list_parsing) {
  std::vector<std::string> hosts;
  BOOST_TEST(!split_hosts("gpu1,gpu2", hosts).has_value());
  BOOST_TEST(hosts == (std::vector<std::string>{"gpu1", "gpu2"}));
  auto twice = split_hosts("gpu1,gpu1", hosts);
  BOOST_TEST_REQUIRE(twice.has_value());
  BOOST_TEST(twice->find("--nproc-per-host") != std::string::npos);
  BOOST_TEST(split_hosts("gpu1,,gpu2", hosts).has_value());
}

BOOST_AUTO_TEST_CASE(the_earliest_failure_is_the_one_reported) {
  std::vector<RankOutcome> all(3);
  auto set = [&all](std::size_t i, std::string host, int rank, int local, int status, std::string ended) {
    all[i].slot.host = std::move(host);
    all[i].slot.rank = rank;
    all[i].slot.local_rank = local;
    all[i].status = status;
    all[i].ended_at = std::move(ended);
  };
  set(0, "a", 0, 0, 1, "2026-12-01T10:00:05.200Z");    // the Gloo error that followed
  set(1, "b", 1, 0, 137, "2026-12-01T10:00:05.100Z");  // killed: the cause
  set(2, "b", 2, 1, 0, "2026-12-01T10:00:04.000Z");
  auto f = first_failure(all);
  BOOST_TEST_REQUIRE(f.has_value());
  BOOST_TEST(f->slot.rank == 1);
  BOOST_TEST(f->slot.host == "b");
  all[1].status = 0;
  all[0].status = 0;
  BOOST_TEST(!first_failure(all).has_value());
}
