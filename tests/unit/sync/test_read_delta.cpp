// The agent's side of a pull with deltas (read_delta): the delta it answers turns the helper's
// copy into its file exactly; a file over the memory cap is answered too_big (the helper then
// reads it in chunks) without being read; a directory or a missing file is refused.
#define BOOST_TEST_MODULE read_delta
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <span>
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

namespace {

// The helper's side of a two-level pull, as sync_pull does it: coarse signature, the agent's
// ranges, fine signatures of those ranges, the refined delta applied to the helper's copy.
std::vector<std::uint8_t> two_level_pull(const std::filesystem::path& file, const std::vector<std::uint8_t>& mine,
                                         const std::function<void()>& between = {}) {
  std::vector<std::uint8_t> coarse_sig;
  BOOST_REQUIRE(delta::write_signature(mine, 0, mine.size(), {64u << 10, 8}, coarse_sig).has_value());
  agent::ReadDeltaRequest req;
  req.signature = coarse_sig;
  req.ranges_only = true;
  auto first = agent::read_delta(file, req);
  BOOST_REQUIRE_MESSAGE(first.has_value(), (first ? "" : first.error().message));
  std::vector<std::uint8_t> final_delta = first->delta;
  if (first->ranges) {
    std::vector<std::vector<std::uint8_t>> fine;
    for (const auto& r : *first->ranges) {
      fine.emplace_back();
      BOOST_REQUIRE(delta::write_signature(std::span(mine).subspan(r.offset, r.length), r.offset, mine.size(), {1024, 8},
                                           fine.back())
                        .has_value());
    }
    if (between) between();
    req.ranges_only = false;
    for (const auto& f : fine) req.fine.emplace_back(f);
    auto second = agent::read_delta(file, req);
    BOOST_REQUIRE_MESSAGE(second.has_value(), (second ? "" : second.error().message));
    BOOST_TEST((second->hash == first->hash));
    final_delta = second->delta;
  }
  auto rebuilt = delta::apply_delta(mine, final_delta, 1u << 30);
  BOOST_REQUIRE_MESSAGE(rebuilt.has_value(), (rebuilt ? "" : rebuilt.error().message));
  return *rebuilt;
}

}  // namespace

// Two levels, the second answered from the first's cached coarse delta and hash (the file is not
// read again): exact for edits at the start, middle and end, insertions, deletions and sizes that
// are no multiple of a block; and exact again when the file is touched between the requests (the
// cache misses and the file is read).
BOOST_AUTO_TEST_CASE(two_level_pulls_rebuild_the_agents_file_exactly) {
  TempDir t("ferry-read-delta");
  const auto mine = random_bytes((2u << 20) + 333, 7);
  std::vector<std::pair<std::string, std::vector<std::uint8_t>>> cases;
  for (std::size_t at : {std::size_t{0}, mine.size() / 2 + 5, mine.size() - 1}) {
    auto b = mine;
    b[at] ^= 0x77;
    cases.emplace_back("1 byte at " + std::to_string(at), std::move(b));
  }
  {
    auto b = mine;
    b.insert(b.begin() + 100000, 4096 + 3, 0x42);
    cases.emplace_back("4099 bytes inserted", std::move(b));
  }
  {
    auto b = mine;
    b.erase(b.begin() + 700000, b.begin() + 700000 + 5000);
    cases.emplace_back("5000 bytes deleted", std::move(b));
  }
  int touched = 0;
  for (bool touch : {false, true}) {
    for (const auto& [what, theirs] : cases) {
      BOOST_TEST_CONTEXT(what << (touch ? ", touched between requests" : "")) {
        const auto file = t / "model.bin";
        ferry::test::write_file(file, std::string(theirs.begin(), theirs.end()));
        auto rebuilt = two_level_pull(file, mine, [&] {
          if (!touch) return;
          ++touched;
          std::filesystem::last_write_time(file, std::filesystem::last_write_time(file) + std::chrono::seconds(3));
        });
        BOOST_TEST((rebuilt == theirs));
      }
    }
  }
  BOOST_TEST(touched == 5);  // every case went through two levels
}
