// The env mirror's pure parts: the interpreter probe's output parsed whatever noise surrounds it,
// the size cap's choice of packages, one cache per (host, interpreter).
#define BOOST_TEST_MODULE env_mirror
#include <boost/test/unit_test.hpp>

#include "helper/env/env_mirror.hpp"
#include "helper/env/env_probe.hpp"

using namespace ferry::env;

BOOST_AUTO_TEST_CASE(probe_output_is_found_among_noise) {
  const std::string out =
      "Welcome to the box!\n"
      "FERRY-ENV-INFO {\"python\": \"3.11.2\", \"implementation\": \"CPython\", \"executable\": \"/usr/bin/python3\", "
      "\"platform\": \"Linux\", \"machine\": \"x86_64\", \"sysPath\": [{\"path\": \"/usr/lib/python3.11\", \"kind\": \"stdlib\"}, "
      "{\"path\": \"/usr/lib/python3/dist-packages\", \"kind\": \"site\"}], \"distributions\": [{\"name\": \"torch\", "
      "\"version\": \"1.13.1\"}], \"torch\": \"1.13.1\", \"torchCuda\": \"\", \"cudaAvailable\": false, \"cudaDevices\": 0}\n"
      "bye\n";
  auto info = parse_probe_output(out, "python3");
  BOOST_TEST_REQUIRE(info.has_value(), (info ? "" : info.error()));
  BOOST_TEST(info->python == "3.11.2");
  BOOST_TEST(info->interpreter == "python3");
  BOOST_TEST(info->sys_path.size() == 2u);
  BOOST_TEST(info->sys_path[1].kind == "site");
  BOOST_TEST(info->torch.value_or("") == "1.13.1");
  BOOST_TEST(info->torch_cuda.value_or("x") == "");
  auto back = env_info_from_json(to_json(*info));
  BOOST_TEST_REQUIRE(back.has_value());
  BOOST_TEST(back->distributions.size() == 1u);
}

BOOST_AUTO_TEST_CASE(bad_probe_output_says_why) {
  BOOST_TEST(!parse_probe_output("bash: python3: command not found\n", "python3").has_value());
  BOOST_TEST(parse_probe_output("FERRY-ENV-INFO {not json\n", "python3").error().find("not valid JSON") != std::string::npos);
  // A relative sys.path entry from a hostile or broken box is refused (it would be a local path).
  auto rel = parse_probe_output("FERRY-ENV-INFO {\"python\": \"3\", \"sysPath\": [{\"path\": \"../x\"}]}\n", "python3");
  BOOST_TEST(!rel.has_value());
}

BOOST_AUTO_TEST_CASE(cap_leaves_out_the_largest_packages) {
  std::vector<std::pair<std::string, std::uint64_t>> files{
      {"torch/__init__.py", 600}, {"torch/nn/linear.py", 400}, {"torch-1.13.dist-info/RECORD", 50},
      {"numpy/__init__.py", 300}, {"six.py", 20}, {"six-1.16.0.dist-info/METADATA", 5}};
  std::vector<std::pair<std::string, std::uint64_t>> dropped;
  BOOST_TEST(leave_out_over_cap(files, 2000, dropped).empty());
  BOOST_TEST(dropped.empty());
  auto out = leave_out_over_cap(files, 400, dropped);
  BOOST_TEST((out == std::set<std::string>{"torch/__init__.py", "torch/nn/linear.py", "torch-1.13.dist-info/RECORD"}));
  BOOST_TEST_REQUIRE(dropped.size() == 1u);
  BOOST_TEST(dropped[0].first == "torch");
  BOOST_TEST(dropped[0].second == 1050u);
  dropped.clear();
  auto tight = leave_out_over_cap(files, 10, dropped);
  BOOST_TEST(dropped.size() == 3u);  // torch, numpy, six: nothing fits
  BOOST_TEST(tight.size() == files.size());
}

BOOST_AUTO_TEST_CASE(one_cache_per_host_and_interpreter) {
  const auto a = mirror_dir("/c", "root@127.0.0.1:22", "python3");
  BOOST_TEST(a.parent_path() == "/c");
  BOOST_TEST(a.filename().string().starts_with("root_127.0.0.1_22-"));
  BOOST_TEST(a != mirror_dir("/c", "root@127.0.0.1:22", "/opt/conda/bin/python"));
  BOOST_TEST(a != mirror_dir("/c", "gpu-box", "python3"));
  BOOST_TEST(a == mirror_dir("/c", "root@127.0.0.1:22", "python3"));
}

BOOST_AUTO_TEST_CASE(doctor_line_says_age_size_and_what_is_missing) {
  auto none = mirror_check(std::nullopt, 1000);
  BOOST_TEST(none.status == "warn");
  BOOST_TEST(none.fix.find("ferry env sync") != std::string::npos);
  MirrorState s;
  s.mirror = "/c/m";
  s.synced_at = 1'000'000;
  s.files = 7864;
  s.bytes = 90ull << 20;
  auto fresh = mirror_check(s, 1'000'000 + 3 * 3600);
  BOOST_TEST(fresh.status == "pass");
  BOOST_TEST(fresh.detail == "7864 files, 90.0 MiB, synced 3 h ago (/c/m)", fresh.detail);
  auto old = mirror_check(s, 1'000'000 + 10 * 86400);
  BOOST_TEST(old.status == "warn");
  BOOST_TEST(old.detail.find("10 days ago") != std::string::npos);
  s.left_out = {{"sympy", 31u << 20}, {"torch", 15u << 20}};
  auto capped = mirror_check(s, 1'000'000);
  BOOST_TEST(capped.status == "warn");
  BOOST_TEST(capped.detail.find("left out: sympy, torch") != std::string::npos, capped.detail);
}
