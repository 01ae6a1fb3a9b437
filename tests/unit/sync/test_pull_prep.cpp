// PullPrep: a local copy read during the listing gives the signature one SignatureBuilder writes
// over it and its xxh3-128; a stop set before or during the read gives nothing (never a partial
// result); a path not asked for is nothing at once; a stopped prep leaves the files still queued
// unread.
#define BOOST_TEST_MODULE pull_prep
#include <boost/test/unit_test.hpp>

#include <fcntl.h>

#include <filesystem>

#include "common/open_file.hpp"
#include "helper/sync/pull_prep.hpp"
#include "protocol/delta/signature.hpp"
#include "tests/support/random_bytes.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using ferry::sync::PullPrep;
using ferry::sync::prepare_copy;
namespace delta = ferry::delta;

namespace {

ferry::posix::UniqueFd open_read(const fs::path& p) { return ferry::posix::UniqueFd(ferry::posix::open_file(p, O_RDONLY)); }

std::vector<std::uint8_t> builder_signature(const std::vector<std::uint8_t>& data, delta::SignatureParams params) {
  std::vector<std::uint8_t> sig;
  auto b = delta::SignatureBuilder::create(params, 0, data.size(), data.size(), sig);
  BOOST_REQUIRE(b.has_value());
  BOOST_REQUIRE(b->update(delta::Bytes(data.data(), data.size())).has_value());
  BOOST_REQUIRE(b->finish().has_value());
  return sig;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_copy_gives_the_builders_signature_and_its_hash) {
  ferry::test::TempDir t{"ferry-pull-prep"};
  // Not a whole number of blocks: the short last block is signed too.
  const auto data = ferry::test::random_bytes((20u << 20) + 12345, 5);
  ferry::test::write_file(t / "model.pt", data);
  const delta::SignatureParams params{1u << 20, 8};
  for (unsigned threads : {1u, 3u}) {
    auto fd = open_read(t / "model.pt");
    const std::atomic<bool> stop{false};
    auto got = prepare_copy(fd.get(), params, threads, stop);
    BOOST_REQUIRE(got.has_value());
    BOOST_TEST(got->key.size == data.size());
    BOOST_TEST((got->hash == delta::hash128(delta::Bytes(data.data(), data.size()))));
    BOOST_TEST((got->signature == builder_signature(data, params)));
  }
}

BOOST_AUTO_TEST_CASE(a_stopped_read_gives_nothing) {
  ferry::test::TempDir t{"ferry-pull-prep"};
  ferry::test::write_file(t / "model.pt", ferry::test::random_bytes(4u << 20, 6));
  auto fd = open_read(t / "model.pt");
  const std::atomic<bool> stop{true};
  BOOST_TEST(!prepare_copy(fd.get(), delta::SignatureParams{1u << 20, 8}, 2, stop).has_value());
}

BOOST_AUTO_TEST_CASE(results_by_path_and_nothing_for_others) {
  ferry::test::TempDir t{"ferry-pull-prep"};
  const auto a = ferry::test::random_bytes(3u << 20, 7), b = ferry::test::random_bytes(2u << 20, 8);
  ferry::test::write_file(t / "a.pt", a);
  ferry::test::write_file(t / "b.pt", b);
  std::vector<PullPrep::Job> jobs;
  jobs.push_back({"a.pt", open_read(t / "a.pt"), {1u << 20, 8}});
  jobs.push_back({"b.pt", open_read(t / "b.pt"), {1u << 20, 8}});
  PullPrep prep(std::move(jobs), 1);
  BOOST_TEST(prep.has("a.pt"));
  BOOST_TEST(prep.has("b.pt"));
  BOOST_TEST(!prep.has("c.pt"));
  BOOST_TEST(!prep.wait_for("c.pt").has_value());
  auto gb = prep.wait_for("b.pt");  // the later one first: waits for both reads
  auto ga = prep.wait_for("a.pt");
  BOOST_REQUIRE(ga.has_value());
  BOOST_REQUIRE(gb.has_value());
  // Each path gets its own file's result, whole: size, hash and signature (never the other's).
  const auto hash_a = delta::hash128(delta::Bytes(a.data(), a.size())), hash_b = delta::hash128(delta::Bytes(b.data(), b.size()));
  BOOST_REQUIRE(!(hash_a == hash_b));
  BOOST_TEST(ga->key.size == a.size());
  BOOST_TEST(gb->key.size == b.size());
  BOOST_TEST((ga->hash == hash_a));
  BOOST_TEST((gb->hash == hash_b));
  BOOST_TEST((ga->signature == builder_signature(a, {1u << 20, 8})));
  BOOST_TEST((gb->signature == builder_signature(b, {1u << 20, 8})));
  // After the waits, still nothing for a path not asked for.
  BOOST_TEST(!prep.has("c.pt"));
  BOOST_TEST(!prep.wait_for("c.pt").has_value());
}

BOOST_AUTO_TEST_CASE(a_stopped_prep_reads_none_of_the_files_still_queued) {
  ferry::test::TempDir t{"ferry-pull-prep"};
  ferry::test::write_file(t / "big.pt", ferry::test::random_bytes(64u << 20, 9));
  std::vector<PullPrep::Job> jobs;
  for (int i = 0; i < 16; ++i) jobs.push_back({"big" + std::to_string(i), open_read(t / "big.pt"), {1u << 20, 8}});
  PullPrep prep(std::move(jobs), 1);
  prep.stop();  // 1 GiB queued: the current file stops at its next piece, the rest are not read
  BOOST_TEST(!prep.wait_for("big15").has_value());
}
