// gpu/status: GPUs read through a stand-in nvidia-smi (two fake devices), a clear "not available"
// answer where nvidia-smi is missing or fails, nvidia-smi's CSV quirks (absent fields, a comma in
// a name); other methods are left to other handlers.
#define BOOST_TEST_MODULE gpu_methods
#include <boost/test/unit_test.hpp>

#include <cstdlib>

#include "remote-runtime/agent/gpu_methods.hpp"
#include "remote-runtime/agent/gpu_query.hpp"

using namespace ferry::protocol;
using ferry::agent::handle_gpu_method;

BOOST_AUTO_TEST_CASE(lists_gpus_through_nvidia_smi) {
  auto reply = handle_gpu_method(Request{1, "gpu/status", json::object()}, FERRY_FAKE_NVIDIA_SMI);
  BOOST_TEST_REQUIRE(reply.has_value());
  BOOST_TEST_REQUIRE(reply->ok());
  const auto& result = std::get<json>(reply->outcome);
  BOOST_TEST(result["available"] == true);
  BOOST_TEST_REQUIRE(result["gpus"].size() == 2u);
  BOOST_TEST(result["gpus"][0]["name"] == "Fake H200");
  BOOST_TEST(result["gpus"][0]["mem_total_bytes"] == (141LL << 30));
  BOOST_TEST(result["gpus"][1]["name"] == "Fake L4");
  BOOST_TEST(!result["gpus"][1].contains("power_w"));
  // Clocks, and the processes on device 0 with their command lines (pid 1 has no memory figure).
  BOOST_TEST(result["gpus"][0]["sm_clock_mhz"] == 1980);
  BOOST_TEST(result["gpus"][0]["mem_clock_mhz"] == 3201);
  BOOST_TEST_REQUIRE(result["gpus"][0]["processes"].size() == 2u);
  BOOST_TEST(result["gpus"][0]["processes"][0]["used_bytes"] == (3LL << 30));
  BOOST_TEST(!result["gpus"][0]["processes"][1].contains("used_bytes"));
  BOOST_TEST(!result["gpus"][1].contains("processes"));
  // The /proc half is there with or without GPUs.
  BOOST_TEST(result["host"]["cpu"]["perCore"].size() > 0u);
  BOOST_TEST(result["host"]["memory"]["totalBytes"].get<std::uint64_t>() > 0u);
}

BOOST_AUTO_TEST_CASE(no_driver_is_an_answer_not_an_error) {
  auto reply = handle_gpu_method(Request{2, "gpu/status", json::object()}, "/nonexistent/nvidia-smi");
  BOOST_TEST_REQUIRE(reply.has_value());
  BOOST_TEST_REQUIRE(reply->ok());
  const auto& result = std::get<json>(reply->outcome);
  BOOST_TEST(result["available"] == false);
  BOOST_TEST(!result.contains("gpus"));
  BOOST_TEST(result["reason"].get<std::string>().starts_with("no NVIDIA GPU visible"));
  BOOST_TEST(result["reason"].get<std::string>().find("/nonexistent/nvidia-smi not found") != std::string::npos);
  BOOST_TEST(result["host"].contains("cpu"));
}

BOOST_AUTO_TEST_CASE(a_failing_driver_is_named_in_the_reason) {
  ::setenv("FAKE_NVIDIA_SMI_FAIL", "1", 1);
  auto reply = handle_gpu_method(Request{4, "gpu/status", json::object()}, FERRY_FAKE_NVIDIA_SMI);
  ::unsetenv("FAKE_NVIDIA_SMI_FAIL");
  BOOST_TEST_REQUIRE(reply.has_value());
  const auto& result = std::get<json>(reply->outcome);
  BOOST_TEST(result["available"] == false);
  BOOST_TEST(result["reason"].get<std::string>().find("couldn't communicate with the NVIDIA driver") != std::string::npos,
             result["reason"]);
}

BOOST_AUTO_TEST_CASE(csv_quirks) {
  // A name holding a comma, "[Not Supported]" fields, a process on an unknown GPU, a blank line.
  json gpus = ferry::agent::parse_gpu_csv("0, GPU-a, Tesla T4, rev. B, 5, 100, 15360, [Not Supported], 40, 585, 5000\n\n",
                                          "GPU-a, 77, [N/A]\nGPU-zzz, 78, 10\n");
  BOOST_TEST_REQUIRE(gpus.size() == 1u);
  BOOST_TEST(gpus[0]["name"] == "Tesla T4, rev. B");
  BOOST_TEST(gpus[0]["util_percent"] == 5.0);
  BOOST_TEST(gpus[0]["mem_used_bytes"] == 100LL << 20);
  BOOST_TEST(!gpus[0].contains("power_w"));
  BOOST_TEST(gpus[0]["sm_clock_mhz"] == 585);
  BOOST_TEST_REQUIRE(gpus[0]["processes"].size() == 1u);
  BOOST_TEST(gpus[0]["processes"][0]["pid"] == 77);
  BOOST_TEST(!gpus[0]["processes"][0].contains("used_bytes"));
  // Lines that are not a GPU row are dropped, not misread.
  BOOST_TEST(ferry::agent::parse_gpu_csv("garbage\n1, 2, 3\n", "").empty());
}

BOOST_AUTO_TEST_CASE(watchdog_utilizations) {
  BOOST_TEST(ferry::agent::gpu_utilizations(FERRY_FAKE_NVIDIA_SMI) == (std::vector<double>{87, 12}));
  BOOST_TEST(ferry::agent::gpu_utilizations("/nonexistent/nvidia-smi").empty());
}

BOOST_AUTO_TEST_CASE(other_methods_pass_through) {
  BOOST_TEST(!handle_gpu_method(Request{3, "fs/stat", json::object()}).has_value());
}
