// A ferry-train checkpoint's tensors (parameters and optimizer state) by name, for the tests that
// compare two runs' final checkpoints bit for bit.
#pragma once

#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "remote-runtime/train/checkpoint.hpp"

namespace ferry::test {

inline std::vector<std::pair<std::string, at::Tensor>> checkpoint_tensors(const std::filesystem::path& file) {
  auto data = ferry::train::read_checkpoint(file);
  BOOST_TEST_REQUIRE(data.has_value(), file.string() + ": " + (data ? "" : data.error()));
  return data->tensors;
}

}  // namespace ferry::test
