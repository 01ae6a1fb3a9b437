// gpu/status: GPUs read through a stand-in libnvidia-ml (two fake devices), and a clear
// "not available" answer where no NVML library loads; other methods are left to other handlers.
#define BOOST_TEST_MODULE gpu_methods
#include <boost/test/unit_test.hpp>

#include "remote-runtime/agent/gpu_methods.hpp"

using namespace ferry::protocol;
using ferry::agent::handle_gpu_method;

BOOST_AUTO_TEST_CASE(lists_gpus_through_nvml) {
  auto reply = handle_gpu_method(Request{1, "gpu/status", json::object()}, FERRY_FAKE_NVML);
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
  auto reply = handle_gpu_method(Request{2, "gpu/status", json::object()}, "/nonexistent/libnvidia-ml.so.1");
  BOOST_TEST_REQUIRE(reply.has_value());
  BOOST_TEST_REQUIRE(reply->ok());
  const auto& result = std::get<json>(reply->outcome);
  BOOST_TEST(result["available"] == false);
  BOOST_TEST(!result.contains("gpus"));
  BOOST_TEST(result["reason"].get<std::string>().starts_with("no NVIDIA GPU visible"));
  BOOST_TEST(result["reason"].get<std::string>().find("NVML") != std::string::npos);
  BOOST_TEST(result["host"].contains("cpu"));
}

BOOST_AUTO_TEST_CASE(other_methods_pass_through) {
  BOOST_TEST(!handle_gpu_method(Request{3, "fs/stat", json::object()}).has_value());
}
