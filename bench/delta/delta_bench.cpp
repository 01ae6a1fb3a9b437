// Delta codec benchmark (not a unit test): wire bytes for a 1-byte edit and throughput of
// signature, delta and patch over a random buffer, for the three ways ferry can send a changed
// large file. Prints one "key: value" line per number; bench/delta/run.sh adds rsync's figures.
//   delta_bench [--mib N]      (default 64)
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "protocol/delta/delta.hpp"
#include "protocol/delta/patch.hpp"
#include "protocol/delta/signature.hpp"

using namespace ferry::delta;
using Buf = std::vector<std::uint8_t>;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
double mbps(std::size_t bytes, double s) { return static_cast<double>(bytes) / 1e6 / s; }

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "delta_bench: %s failed\n", what);
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t mib = 64;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--mib") == 0) mib = std::stoul(argv[i + 1]);
  }
  const std::size_t n = mib << 20;
  Buf base(n);
  std::mt19937_64 rng(1);
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(base.data() + i, &v, 8);
  }
  Buf next = base;
  next[n / 2 + 12345] ^= 0x01;  // the 1-byte edit
  std::printf("size_mib: %zu\n", mib);

  // 1. Helper's own copy of the base: no signature on the wire.
  {
    Buf delta;
    auto t0 = Clock::now();
    auto st = generate_delta_from_base(base, next, 2048, delta);
    const double s = seconds_since(t0);
    require(st.has_value(), "delta from local base");
    std::printf("local_base_delta_bytes: %zu\n", delta.size());
    std::printf("local_base_delta_mb_per_s: %.0f\n", mbps(n, s));
    Buf out(n);
    t0 = Clock::now();
    auto applied = apply_delta(base, delta, out);
    const double ps = seconds_since(t0);
    require(applied.has_value() && out == next, "patch");
    std::printf("patch_mb_per_s: %.0f\n", mbps(n, ps));
  }

  // 2. One level: the agent sends a signature with the default block size.
  const SignatureParams params = default_params(n);
  Buf sig;
  {
    auto t0 = Clock::now();
    require(write_signature(base, 0, n, params, sig).has_value(), "signature");
    const double s = seconds_since(t0);
    std::printf("block_size: %u\n", params.block_size);
    std::printf("signature_bytes: %zu\n", sig.size());
    std::printf("signature_mb_per_s: %.0f\n", mbps(n, s));
  }
  auto view = SignatureView::parse(sig);
  require(view.has_value(), "signature parse");
  {
    Buf delta;
    auto t0 = Clock::now();
    require(generate_delta(*view, next, delta).has_value(), "delta");
    const double s = seconds_since(t0);
    std::printf("one_level_delta_bytes: %zu\n", delta.size());
    std::printf("one_level_total_bytes: %zu\n", delta.size() + sig.size());
    std::printf("delta_mostly_matching_mb_per_s: %.0f\n", mbps(n, s));
  }
  {
    // Worst case for the matcher: nothing matches, the window rolls over every byte.
    Buf unrelated(n);
    for (auto& b : unrelated) b = static_cast<std::uint8_t>(rng());
    Buf delta;
    auto t0 = Clock::now();
    require(generate_delta(*view, unrelated, delta).has_value(), "delta unrelated");
    std::printf("delta_no_match_mb_per_s: %.0f\n", mbps(n, seconds_since(t0)));
  }

  // 3. Two levels: coarse 1 MiB blocks, then 1 KiB blocks over what did not match.
  {
    auto t0 = Clock::now();
    Buf coarse_sig, coarse, fine;
    require(write_signature(base, 0, n, {1u << 20, 8}, coarse_sig).has_value(), "coarse signature");
    auto cv = SignatureView::parse(coarse_sig);
    require(cv.has_value() && generate_delta(*cv, next, coarse).has_value(), "coarse delta");
    auto gaps = unreferenced_base_ranges(coarse);
    require(gaps.has_value(), "gaps");
    std::vector<Buf> fine_sigs;
    std::vector<SignatureView> views;
    std::size_t fine_sig_bytes = 0;
    for (const ByteRange& r : *gaps) {
      Buf s;
      require(write_signature(Bytes(base).subspan(r.offset, r.length), r.offset, n, {1024, 8}, s).has_value(),
              "fine signature");
      fine_sig_bytes += s.size();
      fine_sigs.push_back(std::move(s));
    }
    for (auto& s : fine_sigs) views.push_back(*SignatureView::parse(s));
    require(refine_delta(coarse, views, next, fine).has_value(), "refine");
    const double s = seconds_since(t0);
    auto out = apply_delta(base, fine, n);
    require(out.has_value() && *out == next, "two-level patch");
    std::printf("two_level_coarse_signature_bytes: %zu\n", coarse_sig.size());
    std::printf("two_level_fine_signature_bytes: %zu\n", fine_sig_bytes);
    std::printf("two_level_delta_bytes: %zu\n", fine.size());
    std::printf("two_level_total_bytes: %zu\n", coarse_sig.size() + fine_sig_bytes + fine.size());
    std::printf("two_level_seconds: %.2f\n", s);
  }

  // What the formats send for 1 GiB (computed from the same rules, not measured here).
  const std::uint64_t gib = 1ull << 30;
  const SignatureParams gp = default_params(gib);
  std::printf("gib_local_base_delta_bytes: %llu\n", 40ull + 2 * 11 + 1 + 3 + 2048 + 1);
  std::printf("gib_one_level_total_bytes: %llu\n",
              static_cast<unsigned long long>(signature_wire_size(gib, gp) + 40 + 2 * 11 + 4 + gp.block_size + 1));
  std::printf("gib_two_level_total_bytes: %llu\n",
              static_cast<unsigned long long>(signature_wire_size(gib, {1u << 20, 8}) +
                                              signature_wire_size(1u << 20, {1024, 8}) + 40 + 2 * 11 + 3 + 1024 + 1));
  return 0;
}
