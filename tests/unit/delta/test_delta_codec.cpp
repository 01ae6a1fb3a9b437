// Delta codec: round-trip matrix (edits x block sizes x chunk sizes), two-level refinement,
// small-edit economy, and hostile deltas and signatures that must fail cleanly.
#define BOOST_TEST_MODULE delta_codec
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <random>

#include "protocol/delta/delta.hpp"
#include "protocol/delta/parallel_signature.hpp"
#include "protocol/delta/patch.hpp"
#include "protocol/delta/signature.hpp"
#include "tests/support/random_bytes.hpp"

using namespace ferry::delta;
using Buf = std::vector<std::uint8_t>;

namespace {

using ferry::test::random_bytes;

// Text-like data with lots of repetition, where weak-checksum collisions are common.
Buf structured_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  static const char* words[] = {"import ", "torch", "\n", "    ", "def ", "return ", "x", "(self)", "0000"};
  Buf b;
  while (b.size() < n) {
    const char* w = words[rng() % 9];
    b.insert(b.end(), w, w + std::strlen(w));
  }
  b.resize(n);
  return b;
}

Buf sign(Bytes base, SignatureParams p, std::size_t chunk) {
  Buf sig;
  auto builder = SignatureBuilder::create(p, 0, base.size(), base.size(), sig);
  BOOST_REQUIRE(builder.has_value());
  for (std::size_t at = 0; at < base.size(); at += chunk) {
    BOOST_REQUIRE(builder->update(base.subspan(at, std::min(chunk, base.size() - at))).has_value());
  }
  BOOST_REQUIRE(builder->finish().has_value());
  BOOST_REQUIRE_EQUAL(sig.size(), signature_wire_size(base.size(), p));
  return sig;
}

Buf patch_streaming(Bytes base, Bytes delta, std::size_t chunk) {
  Buf out;
  Patcher p(base, [&](Bytes b) {
    out.insert(out.end(), b.begin(), b.end());
    return true;
  });
  for (std::size_t at = 0; at < delta.size(); at += chunk) {
    auto ok = p.feed(delta.subspan(at, std::min(chunk, delta.size() - at)));
    BOOST_REQUIRE_MESSAGE(ok.has_value(), ok.error().message);
  }
  auto ok = p.finish();
  BOOST_REQUIRE_MESSAGE(ok.has_value(), ok.error().message);
  return out;
}

struct Edit {
  const char* name;
  Buf (*apply)(const Buf& base, std::mt19937_64& rng);
};

Buf ins(const Buf& b, std::size_t at, std::size_t n, std::mt19937_64& rng) {
  Buf r(b.begin(), b.begin() + at);
  for (std::size_t i = 0; i < n; ++i) r.push_back(static_cast<std::uint8_t>(rng()));
  r.insert(r.end(), b.begin() + at, b.end());
  return r;
}

const Edit kEdits[] = {
    {"identical", [](const Buf& b, std::mt19937_64&) { return b; }},
    {"insert_start", [](const Buf& b, std::mt19937_64& r) { return ins(b, 0, 13, r); }},
    {"insert_middle", [](const Buf& b, std::mt19937_64& r) { return ins(b, b.size() / 2, 37, r); }},
    {"insert_end", [](const Buf& b, std::mt19937_64& r) { return ins(b, b.size(), 5, r); }},
    {"delete_middle",
     [](const Buf& b, std::mt19937_64&) {
       Buf r = b;
       const std::size_t at = r.size() / 3, n = std::min<std::size_t>(100, r.size() - at);
       r.erase(r.begin() + at, r.begin() + at + n);
       return r;
     }},
    {"replace_byte",
     [](const Buf& b, std::mt19937_64&) {
       Buf r = b;
       if (!r.empty()) r[r.size() / 2] ^= 0x5a;
       return r;
     }},
    {"append_block", [](const Buf& b, std::mt19937_64& r) { return ins(b, b.size(), 4096, r); }},
    {"truncate_half", [](const Buf& b, std::mt19937_64&) { return Buf(b.begin(), b.begin() + b.size() / 2); }},
    {"empty_new", [](const Buf&, std::mt19937_64&) { return Buf{}; }},
    {"unrelated", [](const Buf& b, std::mt19937_64& r) { return random_bytes(b.size() + 3, r()); }},
    {"many_edits",
     [](const Buf& b, std::mt19937_64& r) {
       Buf x = b;
       for (int i = 0; i < 8 && !x.empty(); ++i) {
         const std::size_t at = r() % x.size();
         if (i % 2) x.erase(x.begin() + at, x.begin() + std::min(x.size(), at + 1 + r() % 50));
         else x = ins(x, at, 1 + r() % 50, r);
       }
       return x;
     }},
    {"swap_halves",
     [](const Buf& b, std::mt19937_64&) {
       Buf r(b.begin() + b.size() / 2, b.end());
       r.insert(r.end(), b.begin(), b.begin() + b.size() / 2);
       return r;
     }},
};

}  // namespace

BOOST_AUTO_TEST_CASE(round_trip_matrix) {
  const std::size_t base_sizes[] = {0, 1, 700, 20000, 150001};
  const std::uint32_t block_sizes[] = {16, 64, 512, 4096};
  const std::size_t chunks[] = {1, 7, 4096, SIZE_MAX};
  std::mt19937_64 rng(42);
  int cases = 0;
  for (std::size_t size : base_sizes) {
    for (int kind = 0; kind < 2; ++kind) {
      const Buf base = kind ? structured_bytes(size, size) : random_bytes(size, size + 1);
      for (const Edit& e : kEdits) {
        const Buf next = e.apply(base, rng);
        for (std::uint32_t bs : block_sizes) {
          const std::size_t chunk = chunks[cases % 4];
          BOOST_TEST_CONTEXT(e.name << " size=" << size << " kind=" << kind << " block=" << bs << " chunk=" << chunk) {
            const Buf sig = sign(base, {bs, 8}, std::min(chunk, std::max<std::size_t>(base.size(), 1)));
            auto view = SignatureView::parse(sig);
            BOOST_REQUIRE(view.has_value());
            Buf d1, d2;
            auto s1 = generate_delta(*view, next, d1);
            auto s2 = generate_delta_from_base(base, next, bs, d2);
            BOOST_REQUIRE(s1.has_value());
            BOOST_REQUIRE(s2.has_value());
            BOOST_TEST(s1->copied_bytes + s1->literal_bytes == next.size());
            auto out1 = apply_delta(base, d1, 1u << 30);
            BOOST_REQUIRE(out1.has_value());
            BOOST_TEST((*out1 == next));
            BOOST_TEST((patch_streaming(base, d2, chunk == SIZE_MAX ? d2.size() + 1 : chunk) == next));
            if (std::string_view(e.name) == "identical" && size > 0) BOOST_TEST(s1->literal_bytes == 0u);
            if (std::string_view(e.name) == "replace_byte" && size >= 20000) {
              BOOST_TEST(s2->literal_bytes <= 2u * bs);
            }
            ++cases;
          }
        }
      }
    }
  }
  BOOST_TEST(cases == 5 * 2 * 12 * 4);
}

BOOST_AUTO_TEST_CASE(one_byte_edit_in_large_random_file_is_tiny) {
  const Buf base = random_bytes(4u << 20, 7);
  Buf next = base;
  next[1234567] ^= 1;
  Buf delta;
  auto stats = generate_delta_from_base(base, next, 1024, delta);
  BOOST_REQUIRE(stats.has_value());
  BOOST_TEST(stats->literal_bytes == 1024u);
  BOOST_TEST(delta.size() < 1200u);
  auto out = apply_delta(base, delta, next.size());
  BOOST_REQUIRE(out.has_value());
  BOOST_TEST((*out == next));
}

// The budget: a 1-byte edit of a large file costs at most 64 KiB on the wire, signature
// side included. Checked at 64 MiB for both ways ferry sends a delta (bench/delta for 1 GiB).
BOOST_AUTO_TEST_CASE(one_byte_edit_of_64_mib_fits_64_kib_on_the_wire) {
  const std::size_t n = 64u << 20;
  Buf base(n);
  std::mt19937_64 rng(64);
  for (std::size_t i = 0; i < n; i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(base.data() + i, &v, 8);
  }
  Buf next = base;
  next[n / 2 + 777] ^= 0x10;

  Buf local;  // against the helper's own copy: no signature at all
  BOOST_REQUIRE(generate_delta_from_base(base, next, 2048, local).has_value());
  BOOST_TEST(local.size() <= 4096u);

  Buf coarse_sig, coarse, fine;  // against the agent's file: two signature levels
  BOOST_REQUIRE(write_signature(base, 0, n, {1u << 20, 8}, coarse_sig).has_value());
  BOOST_REQUIRE(generate_delta(*SignatureView::parse(coarse_sig), next, coarse).has_value());
  auto gaps = unreferenced_base_ranges(coarse);
  BOOST_REQUIRE(gaps.has_value());
  std::vector<Buf> sigs;
  std::size_t wire = coarse_sig.size();
  for (const ByteRange& r : *gaps) {
    Buf s;
    BOOST_REQUIRE(write_signature(Bytes(base).subspan(r.offset, r.length), r.offset, n, {1024, 8}, s).has_value());
    wire += s.size();
    sigs.push_back(std::move(s));
  }
  std::vector<SignatureView> views;
  for (auto& s : sigs) views.push_back(*SignatureView::parse(s));
  BOOST_REQUIRE(refine_delta(coarse, views, next, fine).has_value());
  wire += fine.size();
  BOOST_TEST_MESSAGE("64 MiB, 1-byte edit: local-base delta " << local.size() << " B, two-level total " << wire << " B");
  BOOST_TEST(wire <= 64u * 1024u);
  for (const Buf* d : {&local, &fine}) {
    auto out = apply_delta(base, *d, n);
    BOOST_REQUIRE(out.has_value());
    BOOST_TEST((*out == next));
  }
}

BOOST_AUTO_TEST_CASE(two_level_refinement_shrinks_the_literal) {
  const Buf base = random_bytes(1u << 20, 9);
  Buf next = base;
  next[500000] ^= 0xff;
  next.insert(next.begin() + 800000, {1, 2, 3});
  Buf coarse_sig = sign(base, {64u << 10, 8}, SIZE_MAX);
  auto coarse_view = SignatureView::parse(coarse_sig);
  BOOST_REQUIRE(coarse_view.has_value());
  Buf coarse;
  auto cs = generate_delta(*coarse_view, next, coarse);
  BOOST_REQUIRE(cs.has_value());
  BOOST_TEST(cs->literal_bytes >= 64u << 10);
  auto gaps = unreferenced_base_ranges(coarse);
  BOOST_REQUIRE(gaps.has_value());
  BOOST_REQUIRE(!gaps->empty());
  std::vector<Buf> fine_sigs;
  std::vector<SignatureView> views;
  for (const ByteRange& r : *gaps) {
    Buf s;
    BOOST_REQUIRE(write_signature(Bytes(base).subspan(r.offset, r.length), r.offset, base.size(), {512, 8}, s).has_value());
    fine_sigs.push_back(std::move(s));
  }
  for (auto& s : fine_sigs) views.push_back(*SignatureView::parse(s));
  Buf fine;
  auto fs = refine_delta(coarse, views, next, fine);
  BOOST_REQUIRE(fs.has_value());
  BOOST_TEST(fs->literal_bytes <= 4u * 512);
  auto out = apply_delta(base, fine, next.size());
  BOOST_REQUIRE(out.has_value());
  BOOST_TEST((*out == next));
}

BOOST_AUTO_TEST_CASE(hash_stream_equals_the_one_shot_hash_in_any_pieces) {
  std::vector<std::uint8_t> data(100000);
  std::mt19937 rng(7);
  for (auto& x : data) x = static_cast<std::uint8_t>(rng());
  for (std::size_t piece : {1u, 7u, 4096u, 100000u}) {
    Hash128Stream h;
    for (std::size_t at = 0; at < data.size(); at += piece)
      h.update(Bytes(data.data() + at, std::min(piece, data.size() - at)));
    BOOST_TEST((h.digest() == hash128(data)), piece);
  }
  data[500] ^= 1;
  Hash128Stream moved = Hash128Stream();  // moved-into: still a fresh stream
  moved.update(data);
  BOOST_TEST((moved.digest() == hash128(data)));
  BOOST_TEST((Hash128Stream().digest() == hash128({})));
}

BOOST_AUTO_TEST_CASE(block_size_grows_with_sqrt_and_is_bounded) {
  BOOST_TEST(choose_block_size(0) == kSmallestChosenBlock);
  BOOST_TEST(choose_block_size(1u << 20) == 1024u);
  BOOST_TEST(choose_block_size(64ull << 20) == 8192u);
  BOOST_TEST(choose_block_size(1ull << 30) == 32768u);
  BOOST_TEST(choose_block_size(1ull << 50) == kLargestChosenBlock);
}

namespace {

struct Fixture {
  Buf base = random_bytes(10000, 3);
  Buf next;
  Buf delta;
  Fixture() {
    next = base;
    next.insert(next.begin() + 5000, 100, 7);
    BOOST_REQUIRE(generate_delta_from_base(base, next, 512, delta).has_value());
  }
  std::expected<std::vector<std::uint8_t>, DeltaError> apply(const Buf& d) const {
    return apply_delta(base, d, 1u << 20);
  }
};

Buf header_only(std::uint64_t base_size, std::uint64_t out_size) {
  Buf d{'F', 'D', 'L', 'T', 1, 0, 0, 0};
  wire::put_u64(d, base_size);
  wire::put_u64(d, out_size);
  d.resize(d.size() + 16);
  return d;
}

}  // namespace

BOOST_FIXTURE_TEST_CASE(hostile_deltas_fail_cleanly, Fixture) {
  auto code = [&](const Buf& d) { auto r = apply(d); return r ? std::optional<DeltaErrc>{} : std::optional(r.error().code); };
  BOOST_TEST(!code(delta).has_value());

  Buf bad = delta;
  bad[0] = 'X';
  BOOST_TEST((code(bad) == DeltaErrc::bad_magic));
  bad = delta;
  bad[4] = 2;
  BOOST_TEST((code(bad) == DeltaErrc::unsupported_version));
  BOOST_TEST((code(Buf(delta.begin(), delta.begin() + 20)) == DeltaErrc::truncated));
  BOOST_TEST((code(Buf(delta.begin(), delta.end() - 1)) == DeltaErrc::truncated));
  bad = delta;
  bad.push_back(0);
  BOOST_TEST((code(bad) == DeltaErrc::bad_op));

  Buf d = header_only(base.size() + 1, 10);
  d.push_back(kOpEnd);
  BOOST_TEST((code(d) == DeltaErrc::base_mismatch));

  d = header_only(base.size(), 10);
  d.push_back(kOpCopy);
  wire::put_varint(d, base.size() - 5);
  wire::put_varint(d, 10);
  d.push_back(kOpEnd);
  BOOST_TEST((code(d) == DeltaErrc::out_of_bounds));

  d = header_only(base.size(), 10);
  d.push_back(kOpCopy);
  wire::put_varint(d, UINT64_MAX);
  wire::put_varint(d, 2);
  d.push_back(kOpEnd);
  BOOST_TEST((code(d) == DeltaErrc::out_of_bounds));

  d = header_only(base.size(), 10);
  d.push_back(kOpCopy);
  wire::put_varint(d, 0);
  wire::put_varint(d, 11);  // inside the base, beyond the declared output
  d.push_back(kOpEnd);
  BOOST_TEST((code(d) == DeltaErrc::out_of_bounds));

  d = header_only(base.size(), 4);
  d.push_back(kOpLiteral);
  wire::put_varint(d, 5);
  d.insert(d.end(), 5, 1);
  d.push_back(kOpEnd);
  BOOST_TEST((code(d) == DeltaErrc::out_of_bounds));

  d = header_only(base.size(), 4);
  d.push_back(kOpLiteral);
  wire::put_varint(d, 0);
  d.push_back(kOpEnd);
  BOOST_TEST((code(d) == DeltaErrc::bad_op));

  d = header_only(base.size(), 4);
  d.push_back(kOpCopy);
  d.insert(d.end(), 11, 0x80);
  BOOST_TEST((code(d) == DeltaErrc::bad_op));

  d = header_only(base.size(), 4);
  d.push_back(0x07);
  BOOST_TEST((code(d) == DeltaErrc::bad_op));

  d = header_only(base.size(), 4);
  d.push_back(kOpEnd);
  BOOST_TEST((code(d) == DeltaErrc::size_mismatch));

  bad = delta;
  bad.end()[-2] ^= 1;  // a literal byte (the last op before END is a copy or literal)
  auto r = apply(bad);
  BOOST_TEST(!r.has_value());

  // Hash is checked: change one declared hash byte.
  bad = delta;
  bad[30] ^= 1;
  BOOST_TEST((code(bad) == DeltaErrc::hash_mismatch));

  // Output buffer smaller than declared.
  Buf small(next.size() - 1);
  auto n = apply_delta(base, delta, small);
  BOOST_TEST(!n.has_value());
}

BOOST_FIXTURE_TEST_CASE(random_mutations_never_escape_bounds, Fixture) {
  std::mt19937_64 rng(5);
  int rejected = 0;
  for (int i = 0; i < 3000; ++i) {
    Buf m = delta;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) m[kDeltaHeaderSize + rng() % (m.size() - kDeltaHeaderSize)] = static_cast<std::uint8_t>(rng());
    if (rng() % 4 == 0) m.resize(kDeltaHeaderSize + rng() % (m.size() - kDeltaHeaderSize));
    auto out = apply(m);
    if (!out) ++rejected;
    else BOOST_TEST((*out == next));  // only an unchanged meaning may pass the hash check
  }
  BOOST_TEST(rejected > 2500);
}

BOOST_AUTO_TEST_CASE(hostile_signatures_fail_cleanly) {
  const Buf base = random_bytes(5000, 1);
  Buf sig;
  BOOST_REQUIRE(write_signature(base, 0, base.size(), {512, 8}, sig).has_value());
  BOOST_TEST(SignatureView::parse(sig).has_value());
  BOOST_TEST((SignatureView::parse(Buf(sig.begin(), sig.end() - 1)).error().code == DeltaErrc::truncated));
  Buf extra = sig;
  extra.push_back(0);
  BOOST_TEST((SignatureView::parse(extra).error().code == DeltaErrc::bad_op));
  Buf bad = sig;
  bad[6] = 17;  // strong length
  BOOST_TEST((SignatureView::parse(bad).error().code == DeltaErrc::bad_parameters));
  bad = sig;
  wire::put_u32(bad, 0);  // grow body; then corrupt block size to 0
  bad = sig;
  bad[8] = bad[9] = bad[10] = bad[11] = 0;
  BOOST_TEST((SignatureView::parse(bad).error().code == DeltaErrc::bad_parameters));
  bad = sig;
  bad[27] = 0x7f;  // range length far beyond the file size
  BOOST_TEST((SignatureView::parse(bad).error().code == DeltaErrc::bad_parameters));
  BOOST_TEST(!write_signature(base, 1, base.size(), {512, 8}, sig).has_value());
}

// A caller that already hashed the new data passes the hash: the delta is byte for byte the one
// computed without it; a wrong hash gives a delta the patcher refuses, never a wrong file.
BOOST_AUTO_TEST_CASE(a_known_new_hash_gives_the_same_delta_and_a_wrong_one_is_refused) {
  const Buf base = structured_bytes(300001, 5);
  Buf next = base;
  next[150000] ^= 0x10;
  next.insert(next.begin() + 1000, {7, 7, 7, 7});
  const Buf sig = sign(base, {1024, 8}, SIZE_MAX);
  auto view = SignatureView::parse(sig);
  BOOST_REQUIRE(view.has_value());
  Buf plain, known, from_base_plain, from_base_known;
  BOOST_REQUIRE(generate_delta(*view, next, plain).has_value());
  BOOST_REQUIRE(generate_delta(*view, next, known, hash128(next)).has_value());
  BOOST_TEST((plain == known));
  BOOST_REQUIRE(generate_delta_from_base(base, next, 1024, from_base_plain).has_value());
  BOOST_REQUIRE(generate_delta_from_base(base, next, 1024, from_base_known, hash128(next)).has_value());
  BOOST_TEST((from_base_plain == from_base_known));
  Buf lying;
  BOOST_REQUIRE(generate_delta(*view, next, lying, hash128(base)).has_value());
  auto out = apply_delta(base, lying, 1u << 20);
  BOOST_REQUIRE(!out.has_value());
  BOOST_TEST((out.error().code == DeltaErrc::hash_mismatch));
  // refine_delta checks the coarse delta against the given hash, and writes it into its header.
  const Buf coarse_sig = sign(base, {64u << 10, 8}, SIZE_MAX);
  auto coarse_view = SignatureView::parse(coarse_sig);
  BOOST_REQUIRE(coarse_view.has_value());
  Buf coarse;
  BOOST_REQUIRE(generate_delta(*coarse_view, next, coarse, hash128(next)).has_value());
  std::vector<SignatureView> none;
  Buf refined;
  BOOST_TEST(!refine_delta(coarse, none, next, refined, hash128(base)).has_value());
  refined.clear();
  BOOST_REQUIRE(refine_delta(coarse, none, next, refined, hash128(next)).has_value());
  auto rebuilt = apply_delta(base, refined, 1u << 20);
  BOOST_REQUIRE(rebuilt.has_value());
  BOOST_TEST((*rebuilt == next));
}

// An unchanged run after a copy is matched by strong hash at the continuation; a block moved
// elsewhere still needs the weak search: both give exact output and only the edited block as literal.
BOOST_AUTO_TEST_CASE(continuation_and_search_both_find_their_blocks) {
  const Buf base = random_bytes(64u * 1024 + 100, 11);
  Buf next(base.begin() + 8 * 1024, base.end());            // the first 8 blocks moved to the end
  next.insert(next.end(), base.begin(), base.begin() + 8 * 1024);
  next[20 * 1024 + 5] ^= 1;                                    // and one byte edited
  const Buf sig = sign(base, {1024, 8}, SIZE_MAX);
  auto view = SignatureView::parse(sig);
  BOOST_REQUIRE(view.has_value());
  for (int from_base = 0; from_base < 2; ++from_base) {
    Buf d;
    auto s = from_base ? generate_delta_from_base(base, next, 1024, d) : generate_delta(*view, next, d);
    BOOST_REQUIRE(s.has_value());
    BOOST_TEST(s->literal_bytes <= 1024u + 100u);  // the edited block, and the short tail moved inside
    auto out = apply_delta(base, d, 1u << 20);
    BOOST_REQUIRE(out.has_value());
    BOOST_TEST((*out == next));
  }
}

// sign_in_parallel writes exactly the bytes one builder would, for any share count; a failing
// read and a file that ends early are errors, not short signatures.
BOOST_AUTO_TEST_CASE(parallel_signatures_equal_the_sequential_ones) {
  const Buf base = random_bytes((5u << 20) + 321, 77);
  for (std::uint32_t block : {512u, 64u << 10, 1u << 20}) {
    for (std::uint64_t offset : {std::uint64_t{0}, std::uint64_t{block} * 3}) {
      const std::uint64_t length = base.size() - offset - 1000;
      Buf one;
      BOOST_REQUIRE(write_signature(Bytes(base).subspan(offset, length), offset, base.size(), {block, 8}, one).has_value());
      for (unsigned threads : {1u, 2u, 3u, 8u}) {
        BOOST_TEST_CONTEXT("block=" << block << " offset=" << offset << " threads=" << threads) {
          auto read_at = [&](std::uint64_t at, std::uint8_t* buf, std::size_t n) -> ssize_t {
            const std::size_t k = std::min<std::size_t>(n, base.size() - at);
            std::memcpy(buf, base.data() + at, k);
            return static_cast<ssize_t>(k);
          };
          Buf par = {0xEE};  // appended after what is there
          BOOST_REQUIRE(sign_in_parallel(read_at, {block, 8}, offset, length, base.size(), threads, par).has_value());
          BOOST_TEST((Buf(par.begin() + 1, par.end()) == one));
          Buf mem;
          BOOST_REQUIRE(sign_in_parallel(Bytes(base).subspan(offset, length), {block, 8}, offset, base.size(), threads, mem).has_value());
          BOOST_TEST((mem == one));
        }
      }
    }
  }
  auto failing = [](std::uint64_t, std::uint8_t*, std::size_t) -> ssize_t {
    errno = EIO;
    return -1;
  };
  Buf out;
  auto r = sign_in_parallel(failing, {1024, 8}, 0, 100000, 100000, 2, out);
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST((r.error().code == DeltaErrc::sink_failed));
  BOOST_TEST(out.empty());
  auto shrunk = [&](std::uint64_t at, std::uint8_t* buf, std::size_t n) -> ssize_t {
    if (at >= 50000) return 0;
    const std::size_t k = std::min<std::size_t>(n, 50000 - at);
    std::memcpy(buf, base.data() + at, k);
    return static_cast<ssize_t>(k);
  };
  r = sign_in_parallel(shrunk, {1024, 8}, 0, 100000, 100000, 3, out);
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST((r.error().code == DeltaErrc::truncated));
}

// The streamed matcher: with a window that holds the whole file it writes exactly
// generate_delta's bytes (hash included, taken while reading); with a small one (the window
// sliding many times, long literals written in pieces) its deltas still rebuild the file.
BOOST_AUTO_TEST_CASE(streamed_deltas_equal_the_in_memory_ones_and_rebuild_the_file) {
  std::mt19937_64 rng(77);
  int cases = 0;
  for (std::size_t size : {0u, 700u, 20000u, 150001u}) {
    const Buf base = structured_bytes(size, size + 9);
    for (const Edit& e : kEdits) {
      const Buf next = e.apply(base, rng);
      const ReadAt read_at = [&](std::uint64_t off, std::uint8_t* buf, std::size_t n) -> ssize_t {
        const std::size_t k = off >= next.size() ? 0 : std::min<std::size_t>(n, next.size() - static_cast<std::size_t>(off));
        std::copy_n(next.data() + off, k, buf);
        return static_cast<ssize_t>(k);
      };
      for (std::uint32_t bs : {16u, 512u, 4096u}) {
        BOOST_TEST_CONTEXT(e.name << " size=" << size << " block=" << bs) {
          const Buf sig = sign(base, {bs, 8}, std::max<std::size_t>(base.size(), 1));
          auto view = SignatureView::parse(sig);
          BOOST_REQUIRE(view.has_value());
          Buf whole, wide, narrow;
          BOOST_REQUIRE(generate_delta(*view, next, whole).has_value());
          auto w = generate_delta_streamed(*view, read_at, next.size(), wide, std::nullopt, next.size() + 1);
          BOOST_REQUIRE(w.has_value());
          BOOST_TEST((wide == whole));
          BOOST_TEST((w->hash == hash128(next)));
          auto s = generate_delta_streamed(*view, read_at, next.size(), narrow, std::nullopt, 3 * bs);
          BOOST_REQUIRE(s.has_value());
          auto rebuilt = apply_delta(base, narrow, 1u << 30);
          BOOST_REQUIRE(rebuilt.has_value());
          BOOST_TEST((*rebuilt == next));
          BOOST_TEST(s->stats.copied_bytes + s->stats.literal_bytes == next.size());
          ++cases;
        }
      }
    }
  }
  BOOST_TEST(cases == 4 * 12 * 3);
}

BOOST_AUTO_TEST_CASE(a_streamed_file_that_ends_early_or_fails_to_read_is_an_error) {
  const Buf base = random_bytes(100000, 3);
  const Buf sig = sign(base, {1024, 8}, base.size());
  auto view = SignatureView::parse(sig);
  BOOST_REQUIRE(view.has_value());
  const ReadAt short_read = [&](std::uint64_t off, std::uint8_t* buf, std::size_t n) -> ssize_t {
    const std::size_t k = off >= 50000 ? 0 : std::min<std::size_t>(n, 50000 - static_cast<std::size_t>(off));
    std::copy_n(base.data() + off, k, buf);
    return static_cast<ssize_t>(k);
  };
  Buf out{1, 2, 3};
  auto shrunk = generate_delta_streamed(*view, short_read, base.size(), out, std::nullopt, 8192);
  BOOST_REQUIRE(!shrunk.has_value());
  BOOST_TEST((shrunk.error().code == DeltaErrc::truncated));
  BOOST_TEST((out == Buf{1, 2, 3}));  // nothing of the failed delta left behind
  const ReadAt failing = [](std::uint64_t, std::uint8_t*, std::size_t) -> ssize_t {
    errno = EIO;
    return -1;
  };
  auto failed = generate_delta_streamed(*view, failing, base.size(), out);
  BOOST_REQUIRE(!failed.has_value());
  BOOST_TEST((failed.error().code == DeltaErrc::sink_failed));
}

// hash_delta_output: the output's hash from the delta and reads of a base it does not hold (the
// helper's pull patch and the agent's apply both hash a file this way), in pieces; COPYs that
// land where they were read are marked in place; a failed read, a stop and a COPY past the base
// are errors, never a hash.
BOOST_AUTO_TEST_CASE(the_output_hash_comes_from_the_delta_and_reads_of_the_base) {
  const Buf base = random_bytes(3u << 20, 11);
  Buf next = base;
  next[1000] ^= 0xff;                                        // in place around it
  next.insert(next.begin() + (2u << 20), 4096, std::uint8_t{7});  // everything after moves
  Buf delta;
  BOOST_REQUIRE(generate_delta_from_base(base, next, 1024, delta).has_value());
  std::atomic<bool> stop{false};
  std::uint64_t read_in_place = 0, read_moved = 0;
  auto read = [&](std::uint64_t offset, MutableBytes into, bool in_place) {
    if (offset + into.size() > base.size()) return false;
    std::memcpy(into.data(), base.data() + offset, into.size());
    (in_place ? read_in_place : read_moved) += into.size();
    return true;
  };
  for (std::size_t piece : {std::size_t{7}, std::size_t{4096}, std::size_t{1} << 20}) {
    read_in_place = read_moved = 0;
    auto h = hash_delta_output(delta, base.size(), read, stop, piece);
    BOOST_REQUIRE(h.has_value());
    BOOST_TEST((*h == hash128(next)));
    BOOST_TEST(read_in_place > (1u << 20));  // the first two MiB stayed where they were
    BOOST_TEST(read_moved > (512u << 10));   // the last MiB moved by 4 KiB
  }
  auto failing = [](std::uint64_t, MutableBytes, bool) { return false; };
  auto failed = hash_delta_output(delta, base.size(), failing, stop);
  BOOST_REQUIRE(!failed.has_value());
  BOOST_TEST((failed.error().code == DeltaErrc::sink_failed));
  auto short_base = hash_delta_output(delta, base.size() / 2, read, stop);
  BOOST_REQUIRE(!short_base.has_value());
  BOOST_TEST((short_base.error().code == DeltaErrc::out_of_bounds));
  stop = true;
  auto stopped = hash_delta_output(delta, base.size(), read, stop);
  BOOST_REQUIRE(!stopped.has_value());
  BOOST_TEST(stopped.error().message == "stopped");
  Buf junk{1, 2, 3};
  BOOST_TEST(!hash_delta_output(junk, base.size(), read, stop).has_value());
}
