// /proc parsing on samples recorded on a real machine (tests/unit/agent/proc_samples: two
// readings a second apart around a 50 MiB direct write), plus hand-made lines for the edge
// cases; the rates and percentages computed from them; the bottleneck hint.
#define BOOST_TEST_MODULE host_stats
#include <boost/test/unit_test.hpp>

#include "remote-runtime/agent/host_stats.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace ferry::agent;
using nlohmann::json;

namespace {

const fs::path kSamples = FERRY_PROC_SAMPLES;

// A /proc-shaped directory from the recorded files with suffix `which` ("a" or "b").
fs::path proc_dir(const ferry::test::TempDir& tmp, const std::string& which) {
  fs::path dir = tmp / which;
  fs::create_directories(dir / "net");
  fs::copy_file(kSamples / ("stat." + which), dir / "stat");
  fs::copy_file(kSamples / "meminfo.a", dir / "meminfo");
  fs::copy_file(kSamples / ("diskstats." + which), dir / "diskstats");
  fs::copy_file(kSamples / ("net_dev." + which), dir / "net" / "dev");
  fs::copy_file(kSamples / "loadavg.a", dir / "loadavg");
  return dir;
}

}  // namespace

BOOST_AUTO_TEST_CASE(recorded_samples_parse) {
  auto stat = parse_proc_stat(ferry::test::read_file(kSamples / "stat.a"));
  BOOST_REQUIRE(stat.has_value());
  BOOST_TEST(stat->second.size() == 2u);
  // cpu0: 985372 300 121453 226459 1496 0 783 266 -> total 1336129, idle+iowait 227955.
  BOOST_TEST(stat->second[0].total == 1336129u);
  BOOST_TEST(stat->second[0].busy == 1336129u - 227955u);
  auto mem = parse_meminfo(ferry::test::read_file(kSamples / "meminfo.a"));
  BOOST_REQUIRE(mem.has_value());
  BOOST_TEST(mem->total_bytes == 24684092ull * 1024);
  BOOST_TEST(mem->available_bytes == 19610272ull * 1024);
  auto disk = parse_diskstats(ferry::test::read_file(kSamples / "diskstats.a"));
  BOOST_REQUIRE(disk.has_value());
  BOOST_TEST(disk->in == 12287386ull * 512);  // vda only: loop and zram devices left out
  BOOST_TEST(disk->out == 115369536ull * 512);
  auto net = parse_net_dev(ferry::test::read_file(kSamples / "net_dev.a"));
  BOOST_REQUIRE(net.has_value());
  BOOST_TEST(net->in == 1260814245ull);  // eth0 (+ idle ifb0/ifb1); lo left out
  BOOST_TEST(net->out == 5226891ull);
}

BOOST_AUTO_TEST_CASE(rates_between_two_recorded_readings) {
  ferry::test::TempDir tmp("ferry-proc");
  HostCounters a = read_host_counters(proc_dir(tmp, "a"));
  HostCounters b = read_host_counters(proc_dir(tmp, "b"));
  b.at = a.at + std::chrono::seconds(2);  // as if read 2 s apart
  json j = host_stats_json(a, b);
  BOOST_TEST(j["disk"]["writeBytesPerSec"].get<double>() == 52428800.0 / 2);  // the 50 MiB dd
  BOOST_TEST(j["disk"]["readBytesPerSec"].get<double>() == 56.0 * 512 / 2);
  BOOST_TEST(j["net"]["rxBytesPerSec"].get<double>() == 0.0);
  BOOST_TEST(j["cpu"]["percent"].get<double>() == 100.0);  // the recording machine was saturated
  BOOST_TEST(j["cpu"]["perCore"].size() == 2u);
  BOOST_TEST(j["memory"]["usedBytes"].get<std::uint64_t>() == (24684092ull - 19610272ull) * 1024);
  BOOST_TEST(j["loadavg"] == "5.91 6.53 5.85");
  BOOST_TEST(j["intervalSeconds"].get<double>() == 2.0);
}

BOOST_AUTO_TEST_CASE(hand_made_lines) {
  // cpu0 half busy, cpu1 idle between the two readings; guest time is not counted twice.
  auto a = parse_proc_stat("cpu  100 0 100 800 0 0 0 0 50 0\ncpu0 50 0 50 400 0 0 0 0 0 0\ncpu1 50 0 50 400 0 0 0 0 0 0\n");
  auto b = parse_proc_stat("cpu  150 0 150 900 0 0 0 0 60 0\ncpu0 100 0 100 500 0 0 0 0 0 0\ncpu1 50 0 50 500 0 0 0 0 0 0\n");
  BOOST_REQUIRE(a && b);
  HostCounters ha, hb;
  ha.cpu = a->first, ha.cores = a->second, hb.cpu = b->first, hb.cores = b->second;
  hb.at = ha.at + std::chrono::seconds(1);
  json j = host_stats_json(ha, hb);
  BOOST_TEST(j["cpu"]["perCore"][0].get<double>() == 50.0);
  BOOST_TEST(j["cpu"]["perCore"][1].get<double>() == 0.0);
  BOOST_TEST(j["cpu"]["percent"].get<double>() == 50.0);
  // Partitions and device-mapper volumes repeat their disk's bytes: left out.
  auto d = parse_diskstats(" 259 0 nvme0n1 1 0 10 0 1 0 20 0 0 0 0\n 259 1 nvme0n1p1 1 0 10 0 1 0 20 0 0 0 0\n"
                           " 253 0 dm-0 1 0 10 0 1 0 20 0 0 0 0\n 8 0 sda 1 0 4 0 1 0 8 0 0 0 0\n 8 1 sda1 1 0 4 0 1 0 8 0 0 0 0\n");
  BOOST_REQUIRE(d.has_value());
  BOOST_TEST(d->in == 14u * 512);
  BOOST_TEST(d->out == 28u * 512);
  BOOST_TEST(!parse_proc_stat("intr 1 2 3\n").has_value());
  BOOST_TEST(!parse_net_dev("garbage\n").has_value());
  BOOST_TEST(!parse_meminfo("MemTotal: 5 kB\n").has_value());
  BOOST_TEST(!parse_diskstats("8 0 sda x y\n").has_value());
}

BOOST_AUTO_TEST_CASE(bottleneck_hint_only_when_gpu_starves_and_cpus_are_full) {
  json starving = json::array({{{"index", 0}, {"util_percent", 35}}});
  json busy = json::array({{{"index", 0}, {"util_percent", 95}}});
  auto hint = bottleneck_hint(starving, 97);
  BOOST_REQUIRE(hint.has_value());
  BOOST_TEST(hint->starts_with("input-bound: GPU 0 is at 35 %"));
  BOOST_TEST(hint->find("workers") != std::string::npos);
  BOOST_TEST(hint->find("memory-mapped") != std::string::npos);
  BOOST_TEST(hint->find("GPU.") != std::string::npos);
  BOOST_TEST(!bottleneck_hint(starving, 40).has_value());  // CPUs idle too: not input-bound
  BOOST_TEST(!bottleneck_hint(busy, 97).has_value());
  BOOST_TEST(!bottleneck_hint(json::array(), 97).has_value());
}
