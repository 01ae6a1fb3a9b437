// The agent's whole-file hash cache: a hash is found again for the very same file (device,
// inode, size, mtime, ctime) and for nothing else; one whose read began within kSettle of the
// file's ctime, or of a small file, is not kept; sync/readDelta takes its hash from it (a
// planted value comes back) instead of reading the file again.
#define BOOST_TEST_MODULE hash_cache
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <filesystem>

#include "common/posix/stat_times.hpp"
#include "protocol/delta/signature.hpp"
#include "remote-runtime/agent/sync/hash_cache.hpp"
#include "remote-runtime/agent/sync/read_delta.hpp"
#include "tests/support/random_bytes.hpp"
#include "tests/support/temp_dir.hpp"

namespace agent = ferry::agent::sync;
namespace delta = ferry::delta;
using ferry::test::TempDir;

namespace {

struct stat stat_of(const std::filesystem::path& p) {
  struct stat st {};
  BOOST_REQUIRE(::stat(p.c_str(), &st) == 0);
  return st;
}
// A read that began well after the file's last change.
std::int64_t settled(const struct stat& st) {
  return ferry::posix::ctime_of(st) + std::chrono::nanoseconds(agent::kSettle).count() + 1;
}
delta::Hash128 planted(std::uint8_t v) {
  delta::Hash128 h;
  h.fill(v);
  return h;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_hash_is_found_for_the_same_file_only) {
  TempDir t("ferry-hash-cache");
  ferry::test::write_file(t / "a.bin", ferry::test::random_bytes(2u << 20, 1));
  const struct stat st = stat_of(t / "a.bin");
  BOOST_TEST(!agent::known_hash(st).has_value());
  agent::remember_hash(st, st, settled(st), planted(1));
  BOOST_REQUIRE(agent::known_hash(st).has_value());
  BOOST_TEST((*agent::known_hash(st) == planted(1)));
  // Rewritten (one byte longer: a same-size rewrite within the same clock tick is what kSettle
  // keeps out of the cache, and this test planted its hash as if settled).
  ferry::test::write_file(t / "a.bin", ferry::test::random_bytes((2u << 20) + 1, 2));
  BOOST_TEST(!agent::known_hash(stat_of(t / "a.bin")).has_value());
}

BOOST_AUTO_TEST_CASE(unsettled_reads_and_small_files_are_not_kept) {
  TempDir t("ferry-hash-cache");
  ferry::test::write_file(t / "b.bin", ferry::test::random_bytes(2u << 20, 3));
  ferry::test::write_file(t / "small.bin", ferry::test::random_bytes(1000, 4));
  const struct stat b = stat_of(t / "b.bin"), small = stat_of(t / "small.bin");
  agent::remember_hash(b, b, ferry::posix::ctime_of(b) + 1'000'000, planted(2));  // 1 ms after the write
  BOOST_TEST(!agent::known_hash(b).has_value());
  agent::remember_hash(small, small, settled(small), planted(3));
  BOOST_TEST(!agent::known_hash(small).has_value());
}

BOOST_AUTO_TEST_CASE(read_delta_takes_the_hash_from_the_cache) {
  TempDir t("ferry-hash-cache");
  const auto data = ferry::test::random_bytes(4u << 20, 5);
  ferry::test::write_file(t / "c.bin", data);
  std::vector<std::uint8_t> sig;
  BOOST_REQUIRE(delta::write_signature(data, 0, data.size(), delta::default_params(data.size()), sig).has_value());
  agent::ReadDeltaRequest req;
  req.signature = sig;
  auto first = agent::read_delta(t / "c.bin", req);
  BOOST_REQUIRE(first.has_value());
  BOOST_TEST((first->hash == delta::hash128(delta::Bytes(data.data(), data.size()))));
  // A value no read could give, planted for this very file: read_delta answers with it.
  const struct stat st = stat_of(t / "c.bin");
  agent::remember_hash(st, st, settled(st), planted(7));
  auto second = agent::read_delta(t / "c.bin", req);
  BOOST_REQUIRE(second.has_value());
  BOOST_TEST((second->hash == planted(7)));
}
