// PendingSentCopy: the next .ferry/sent copy built from the previous one and the delta just sent
// is byte-exact (with the kernel copy and with it refused), appears under its hash only on
// commit, and leaves nothing when dropped or when the delta does not build the announced file;
// the previous copy is never modified.
#define BOOST_TEST_MODULE sent_copy
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "helper/sync/sent_copy.hpp"
#include "protocol/delta/delta.hpp"
#include "tests/support/random_bytes.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using Buf = std::vector<std::uint8_t>;
using ferry::sync::PendingSentCopy;
using ferry::test::TempDir;

namespace {

Buf slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Buf(std::istreambuf_iterator<char>(in), {});
}

std::size_t entries(const fs::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_next_copy_is_exact_and_appears_only_on_commit) {
  TempDir t("ferry-sent-copy");
  const Buf old = ferry::test::random_bytes((2u << 20) + 77, 1);
  std::vector<Buf> nexts;
  for (std::size_t at : {std::size_t{0}, old.size() / 2, old.size() - 1}) {
    Buf b = old;
    b[at] ^= 0x20;
    nexts.push_back(std::move(b));
  }
  {
    Buf b = ferry::test::random_bytes(1u << 20, 2);
    b.insert(b.end(), old.begin(), old.end() - 5000);
    nexts.push_back(std::move(b));
  }
  for (bool refuse : {false, true}) {
    for (const Buf& next : nexts) {
      fs::remove_all(t / "sent");
      fs::create_directories(t / "sent");
      ferry::test::write_file(t / "sent" / "old", old);
      Buf d;
      BOOST_REQUIRE(ferry::delta::generate_delta_from_base(old, next, 0, d).has_value());
      ferry::posix::RangeCopier::KernelCopy refusal;
      if (refuse)
        refusal = [](int, std::uint64_t, int, std::uint64_t, std::size_t) -> ssize_t {
          errno = EXDEV;
          return -1;
        };
      auto p = PendingSentCopy::build(t / "sent" / "old", t / "sent" / "new", d, ferry::delta::hash128(next), next.size(), refusal);
      BOOST_REQUIRE_MESSAGE(p.has_value(), (p ? "" : p.error()));
      BOOST_TEST(!fs::exists(t / "sent" / "new"));  // a temp file until commit
      BOOST_TEST(entries(t / "sent") == 2u);
      BOOST_REQUIRE(p->commit().has_value());
      BOOST_TEST((slurp(t / "sent" / "new") == next));
      BOOST_TEST((slurp(t / "sent" / "old") == old));
      BOOST_TEST(entries(t / "sent") == 2u);  // no temp file left
    }
  }
}

BOOST_AUTO_TEST_CASE(a_dropped_or_wrong_copy_leaves_nothing) {
  TempDir t("ferry-sent-copy");
  fs::create_directories(t / "sent");
  const Buf old = ferry::test::random_bytes(300000, 3);
  ferry::test::write_file(t / "sent" / "old", old);
  Buf next = old;
  next[100] ^= 1;
  Buf d;
  BOOST_REQUIRE(ferry::delta::generate_delta_from_base(old, next, 0, d).has_value());
  {
    auto p = PendingSentCopy::build(t / "sent" / "old", t / "sent" / "new", d, ferry::delta::hash128(next), next.size());
    BOOST_REQUIRE(p.has_value());
  }  // the agent said no: dropped
  BOOST_TEST(entries(t / "sent") == 1u);
  // The delta does not build the file announced (another hash): refused, nothing written.
  auto wrong = PendingSentCopy::build(t / "sent" / "old", t / "sent" / "new", d, ferry::delta::hash128(old), next.size());
  BOOST_TEST(!wrong.has_value());
  BOOST_TEST(entries(t / "sent") == 1u);
  // The previous copy is not what the delta was made against (another size).
  ferry::test::write_file(t / "sent" / "old", Buf(old.begin(), old.end() - 1));
  auto other = PendingSentCopy::build(t / "sent" / "old", t / "sent" / "new", d, ferry::delta::hash128(next), next.size());
  BOOST_TEST(!other.has_value());
  BOOST_TEST(entries(t / "sent") == 1u);
}
