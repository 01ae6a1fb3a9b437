// Golden wire files: the signature and delta of a fixed base/new pair must be byte-identical
// to tests/golden/delta/*.bin. After an intended format change, regenerate them with
//   build-x/tests/unit/delta/test_delta_golden -- --regenerate
// and bump kFormatVersion if old readers would misread the new bytes.
#define BOOST_TEST_MODULE delta_golden
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>

#include "protocol/delta/delta.hpp"
#include "protocol/delta/patch.hpp"
#include "protocol/delta/signature.hpp"

using namespace ferry::delta;
using Buf = std::vector<std::uint8_t>;
namespace fs = std::filesystem;

namespace {

const fs::path kDir = FERRY_GOLDEN_DIR;

bool regenerating() {
  auto& suite = boost::unit_test::framework::master_test_suite();
  for (int i = 1; i < suite.argc; ++i) {
    if (std::string_view(suite.argv[i]) == "--regenerate") return true;
  }
  return false;
}

Buf read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  BOOST_REQUIRE_MESSAGE(in, "missing golden file " << p << " (run with -- --regenerate)");
  return Buf(std::istreambuf_iterator<char>(in), {});
}

void write_file(const fs::path& p, const Buf& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  BOOST_REQUIRE(out.good());
}

// The inputs: a short source file and an edited copy (insert, delete, replace, append).
std::pair<Buf, Buf> make_inputs() {
  std::string base;
  for (int i = 0; i < 60; ++i) {
    base += "def step_" + std::to_string(i) + "(model, batch):\n    loss = model(batch).sum()\n    return loss\n";
  }
  std::string next = base;
  next.insert(100, "# inserted comment\n");
  next.erase(2000, 300);
  next.replace(4000, 5, "LOSS!");
  next += "\nif __name__ == '__main__':\n    main()\n";
  return {Buf(base.begin(), base.end()), Buf(next.begin(), next.end())};
}

}  // namespace

BOOST_AUTO_TEST_CASE(signature_and_delta_match_golden_bytes) {
  Buf base, next;
  if (regenerating()) {
    std::tie(base, next) = make_inputs();
    write_file(kDir / "base.bin", base);
    write_file(kDir / "new.bin", next);
  } else {
    base = read_file(kDir / "base.bin");
    next = read_file(kDir / "new.bin");
  }
  Buf sig, delta;
  BOOST_REQUIRE(write_signature(base, 0, base.size(), {512, 8}, sig).has_value());
  auto view = SignatureView::parse(sig);
  BOOST_REQUIRE(view.has_value());
  BOOST_REQUIRE(generate_delta(*view, next, delta).has_value());
  if (regenerating()) {
    write_file(kDir / "signature.bin", sig);
    write_file(kDir / "delta.bin", delta);
  }
  const Buf golden_sig = read_file(kDir / "signature.bin");
  const Buf golden_delta = read_file(kDir / "delta.bin");
  BOOST_TEST(sig == golden_sig, boost::test_tools::per_element());
  BOOST_TEST(delta == golden_delta, boost::test_tools::per_element());
  // The stored delta still applies to the stored base.
  auto out = apply_delta(base, golden_delta, next.size());
  BOOST_REQUIRE(out.has_value());
  BOOST_TEST((*out == next));
}
