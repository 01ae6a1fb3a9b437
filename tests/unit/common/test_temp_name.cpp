// Temp names: bare names beside the target, with ferry's prefix, distinct each time.
#define BOOST_TEST_MODULE temp_name
#include <boost/test/unit_test.hpp>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/temp_name.hpp"

namespace posix = ferry::posix;

BOOST_AUTO_TEST_CASE(names_carry_the_prefix_and_the_target_and_stay_in_its_directory) {
  const std::string n = posix::temp_name("model.pt");
  BOOST_TEST(n.starts_with(".ferry-tmp.model.pt."));
  BOOST_TEST(n.find('/') == std::string::npos);  // a bare name: created beside the target
  BOOST_TEST(n.size() == std::string(".ferry-tmp.model.pt.").size() + 16);
}

BOOST_AUTO_TEST_CASE(long_targets_are_cut_to_fit_a_file_name) {
  const std::string n = posix::temp_name(std::string(255, 'x'));
  BOOST_TEST(n.size() <= 255u);
  BOOST_TEST(n.starts_with(posix::kTempPrefix));
}

BOOST_AUTO_TEST_CASE(names_are_unique_across_calls_and_threads) {
  std::vector<std::vector<std::string>> per(4);
  std::vector<std::thread> threads;
  for (auto& out : per)
    threads.emplace_back([&out] {
      for (int i = 0; i < 5000; ++i) out.push_back(posix::temp_name("f"));
    });
  for (auto& t : threads) t.join();
  std::set<std::string> all;
  for (const auto& out : per) all.insert(out.begin(), out.end());
  BOOST_TEST(all.size() == 20000u);
}
