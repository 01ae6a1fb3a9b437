// patch_to_fd, the helper's side of a pulled delta: the local copy plus the agent's delta rebuild
// the remote file byte for byte, through the real copy_file_range and through the read/write
// fallback (an injected EXDEV); a delta that lies is refused.
#define BOOST_TEST_MODULE patch_file
#include <boost/test/unit_test.hpp>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "common/file_times.hpp"
#include "common/full_io.hpp"
#include "common/open_file.hpp"
#include "common/unique_fd.hpp"
#include "helper/sync/patch_file.hpp"
#include "tests/support/random_bytes.hpp"
#include "tests/support/temp_dir.hpp"

namespace delta = ferry::delta;
using Buf = std::vector<std::uint8_t>;
using ferry::posix::UniqueFd;
using ferry::test::random_bytes;
using ferry::test::TempDir;

namespace {

Buf contents(int fd) {
  ferry::posix::FileStat st;
  BOOST_REQUIRE(ferry::posix::stat_fd(fd, st) == 0);
  Buf v(static_cast<std::size_t>(st.size));
  BOOST_REQUIRE(ferry::posix::pread_full(fd, v.data(), v.size(), 0) == static_cast<ssize_t>(v.size()));
  return v;
}

delta::DeltaHeader header_for(const Buf& base, const Buf& next) { return {base.size(), next.size(), delta::hash128(next)}; }

}  // namespace

BOOST_AUTO_TEST_CASE(pulled_deltas_of_every_shape_rebuild_the_file) {
  TempDir t("ferry-patch-file");
  const Buf base = random_bytes((3u << 20) + 999, 1);
  const std::size_t n = base.size();
  std::vector<std::pair<std::string, Buf>> cases;
  for (std::size_t at : {std::size_t{0}, n / 2 + 3, n - 1}) {
    Buf b = base;
    b[at] ^= 0x11;
    cases.emplace_back("1 byte at " + std::to_string(at), std::move(b));
  }
  {
    Buf b = random_bytes(1u << 20, 2);
    b.insert(b.end(), base.begin(), base.end());
    cases.emplace_back("1 MiB inserted at the start", std::move(b));
  }
  {
    Buf b = base;
    b.erase(b.begin() + 5, b.begin() + 40005);
    cases.emplace_back("40000 bytes deleted", std::move(b));
  }
  cases.emplace_back("grown by 17 bytes", [&] {
    Buf b = base;
    b.insert(b.end(), 17, 0x33);
    return b;
  }());
  ferry::test::write_file(t / "base", base);
  UniqueFd base_fd(ferry::posix::open_file(t / "base", O_RDONLY));
  BOOST_REQUIRE(base_fd);
  for (bool refuse : {false, true}) {
    for (const auto& [what, next] : cases) {
      BOOST_TEST_CONTEXT(what << (refuse ? ", copy_file_range refused" : "")) {
        Buf d;
        auto made = delta::generate_delta_from_base(base, next, 0, d);
        BOOST_REQUIRE(made.has_value());
        UniqueFd out(ferry::posix::open_file(t / "out", O_RDWR | O_CREAT | O_TRUNC, 0600));
        BOOST_REQUIRE(out);
        int calls = 0;
        ferry::posix::RangeCopier::KernelCopy refusal;
        if (refuse)
          refusal = [&](int, std::uint64_t, int, std::uint64_t, std::size_t) -> ssize_t {
            ++calls;
            errno = EXDEV;
            return -1;
          };
        auto stats = ferry::sync::patch_to_fd(d, base_fd.get(), base.size(), out.get(), header_for(base, next), refusal);
        BOOST_REQUIRE_MESSAGE(stats.has_value(), (stats ? "" : stats.error()));
        BOOST_TEST(stats->copied_bytes + stats->literal_bytes == next.size());
        BOOST_TEST((contents(out.get()) == next));
        if (refuse) BOOST_TEST(calls == 1);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_lying_delta_is_refused) {
  TempDir t("ferry-patch-file");
  const Buf base = random_bytes(100000, 3);
  Buf next = base;
  next[10] ^= 1;
  ferry::test::write_file(t / "base", base);
  UniqueFd base_fd(ferry::posix::open_file(t / "base", O_RDONLY));
  UniqueFd out(ferry::posix::open_file(t / "out", O_RDWR | O_CREAT | O_TRUNC, 0600));
  Buf d;
  BOOST_REQUIRE(delta::generate_delta_from_base(base, next, 0, d).has_value());
  // The agent described another file than its delta builds.
  BOOST_TEST(!ferry::sync::patch_to_fd(d, base_fd.get(), base.size(), out.get(), header_for(base, base)).has_value());
  // Made against another base size.
  BOOST_TEST(!ferry::sync::patch_to_fd(d, base_fd.get(), base.size() - 1, out.get(), {base.size() - 1, next.size(), delta::hash128(next)})
                  .has_value());
  // Copies of the right total size but in the wrong order: the hash refuses the result.
  Buf evil(d.begin(), d.begin() + delta::kDeltaHeaderSize);
  for (std::uint64_t off : {50000u, 0u}) {
    evil.push_back(delta::kOpCopy);
    delta::wire::put_varint(evil, off);
    delta::wire::put_varint(evil, 50000);
  }
  evil.push_back(delta::kOpEnd);
  auto r = ferry::sync::patch_to_fd(evil, base_fd.get(), base.size(), out.get(), header_for(base, next));
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().find("hash") != std::string::npos);
  // A copy past the base's end.
  Buf past(d.begin(), d.begin() + delta::kDeltaHeaderSize);
  past.push_back(delta::kOpCopy);
  delta::wire::put_varint(past, 90000);
  delta::wire::put_varint(past, 100000);
  past.push_back(delta::kOpEnd);
  BOOST_TEST(!ferry::sync::patch_to_fd(past, base_fd.get(), base.size(), out.get(), header_for(base, next)).has_value());
}

// A pull of an edit that kept the size: BaseCopy copies the local file into the output first, then
// patch_to_fd writes only what moved or changed. Every shape still rebuilds the file exactly, and a
// copy that differs from the base (changed after it was read) fails the hash.
BOOST_AUTO_TEST_CASE(deltas_patched_into_a_copy_of_the_base_rebuild_the_file) {
  TempDir t("ferry-patch-file");
  const Buf base = random_bytes((3u << 20) + 999, 5);
  const std::size_t n = base.size();
  std::vector<std::pair<std::string, Buf>> cases;
  for (std::size_t at : {std::size_t{0}, n / 2 + 3, n - 1}) {
    Buf b = base;
    b[at] ^= 0x11;
    cases.emplace_back("1 byte at " + std::to_string(at), std::move(b));
  }
  {
    Buf b = base;
    std::rotate(b.begin(), b.begin() + 777777, b.end());
    cases.emplace_back("rotated: every range moved", std::move(b));
  }
  {
    Buf b = base;
    b.resize(n - 5000);
    cases.emplace_back("5000 bytes cut from the end", std::move(b));
  }
  {
    Buf b = random_bytes(1u << 20, 6);
    b.insert(b.end(), base.begin(), base.end());
    cases.emplace_back("1 MiB inserted at the start", std::move(b));
  }
  ferry::test::write_file(t / "base", base);
  UniqueFd base_fd(ferry::posix::open_file(t / "base", O_RDONLY));
  BOOST_REQUIRE(base_fd);
  for (const auto& [what, next] : cases) {
    BOOST_TEST_CONTEXT(what) {
      Buf d;
      BOOST_REQUIRE(delta::generate_delta_from_base(base, next, 0, d).has_value());
      UniqueFd out(ferry::posix::open_file(t / "out", O_RDWR | O_CREAT | O_TRUNC, 0600));
      BOOST_REQUIRE(out);
      {
        ferry::sync::BaseCopy copy(base_fd.get(), out.get(), base.size());
        BOOST_REQUIRE(copy.ready());
      }
      BOOST_TEST((contents(out.get()) == base));
      auto stats = ferry::sync::patch_to_fd(d, base_fd.get(), base.size(), out.get(), header_for(base, next), {}, true);
      BOOST_REQUIRE_MESSAGE(stats.has_value(), (stats ? "" : stats.error()));
      BOOST_TEST(stats->copied_bytes + stats->literal_bytes == next.size());
      BOOST_TEST((contents(out.get()) == next));
    }
  }
  // The copy is not the base any more: the unmoved ranges are hashed from the copy, so it fails.
  Buf next = base, d;
  next[100] ^= 1;
  BOOST_REQUIRE(delta::generate_delta_from_base(base, next, 0, d).has_value());
  UniqueFd out(ferry::posix::open_file(t / "out", O_RDWR | O_CREAT | O_TRUNC, 0600));
  {
    ferry::sync::BaseCopy copy(base_fd.get(), out.get(), base.size());
    BOOST_REQUIRE(copy.ready());
  }
  const std::uint8_t flipped = base[2'000'000] ^ 0x10;
  BOOST_REQUIRE(ferry::posix::pwrite_full(out.get(), &flipped, 1, 2'000'000) == 1);
  auto r = ferry::sync::patch_to_fd(d, base_fd.get(), base.size(), out.get(), header_for(base, next), {}, true);
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().find("does not hash") != std::string::npos);
}
