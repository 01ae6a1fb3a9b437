// The agent's side of a pull with deltas (read_delta): the delta it answers turns the helper's
// copy into its file exactly; a file over the memory cap is answered too_big (the helper then
// reads it in chunks) without being read; a directory or a missing file is refused.
#define BOOST_TEST_MODULE read_delta
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "protocol/delta/delta.hpp"
#include "protocol/delta/patch.hpp"
#include "protocol/delta/signature.hpp"
#include "remote-runtime/agent/sync/read_delta.hpp"
#include "tests/support/random_bytes.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::test::TempDir;
namespace delta = ferry::delta;
namespace agent = ferry::agent::sync;

namespace {

using ferry::test::random_bytes;

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace

BOOST_AUTO_TEST_CASE(the_delta_rebuilds_the_agents_file_from_the_helpers_copy) {
  TempDir t("ferry-read-delta");
  const std::string base = random_bytes<std::string>(600 << 10, 1);
  std::string now = base;
  now[1234] ^= 0x5a;
  now.insert(300000, "an insertion in the middle");
  ferry::test::write_file(t / "f.bin", now);

  const auto b = bytes_of(base);
  std::vector<std::uint8_t> sig;
  BOOST_REQUIRE(delta::write_signature(b, 0, b.size(), delta::default_params(b.size()), sig).has_value());
  agent::ReadDeltaRequest req;
  req.signature = sig;
  auto got = agent::read_delta(t / "f.bin", req);
  BOOST_REQUIRE(got.has_value());
  BOOST_TEST(!got->too_big);
  BOOST_TEST(got->size == now.size());
  BOOST_TEST(got->delta.size() < now.size() / 4);  // mostly copies
  auto rebuilt = delta::apply_delta(b, got->delta, now.size());
  BOOST_REQUIRE(rebuilt.has_value());
  BOOST_TEST((*rebuilt == bytes_of(now)));
  BOOST_TEST((got->hash == delta::hash128(bytes_of(now))));
}

BOOST_AUTO_TEST_CASE(a_file_over_the_memory_cap_is_answered_too_big_unread) {
  TempDir t("ferry-read-delta-big");
  const std::string content = random_bytes<std::string>(256 << 10, 2);
  ferry::test::write_file(t / "big.bin", content);
  const auto b = bytes_of(content);
  std::vector<std::uint8_t> sig;
  BOOST_REQUIRE(delta::write_signature(b, 0, b.size(), delta::default_params(b.size()), sig).has_value());
  agent::ReadDeltaRequest req;
  req.signature = sig;
  req.max_file = 100 << 10;
  auto got = agent::read_delta(t / "big.bin", req);
  BOOST_REQUIRE(got.has_value());
  BOOST_TEST(got->too_big);
  BOOST_TEST(got->delta.empty());
  BOOST_TEST(got->size == content.size());
}

BOOST_AUTO_TEST_CASE(directories_and_missing_files_are_refused) {
  TempDir t("ferry-read-delta-kind");
  std::filesystem::create_directories(t / "dir");
  std::vector<std::uint8_t> sig;
  const std::vector<std::uint8_t> empty;
  BOOST_REQUIRE(delta::write_signature(empty, 0, 0, delta::default_params(0), sig).has_value());
  agent::ReadDeltaRequest req;
  req.signature = sig;
  BOOST_TEST(!agent::read_delta(t / "dir", req).has_value());
  BOOST_TEST(!agent::read_delta(t / "missing", req).has_value());
}
