// The manifest's hand-written JSON: the same bytes nlohmann's DOM would dump for any manifest
// it can hold, names and link targets that are not UTF-8 kept losslessly (entries_hex), and
// every file it writes parses.
#define BOOST_TEST_MODULE manifest
#include <boost/test/unit_test.hpp>

#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "helper/sync/manifest.hpp"

using namespace ferry::sync;

namespace {

// What manifest_to_json wrote before it was written by hand (nlohmann's DOM, sorted keys).
std::string dom_dump(const Manifest& m) {
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [path, meta] : m.entries) {
    nlohmann::json e{{"kind", meta.kind == EntryKind::file ? "file" : meta.kind == EntryKind::dir ? "dir" : "symlink"},
                     {"mode", meta.mode},
                     {"mtime_ns", meta.mtime_ns}};
    if (meta.kind == EntryKind::file) {
      e["size"] = meta.size;
      if (meta.hash) e["hash"] = to_hex(*meta.hash);
    }
    if (meta.kind == EntryKind::symlink) e["target"] = meta.link_target;
    entries[path] = std::move(e);
  }
  nlohmann::json doc{{"version", kManifestVersion}, {"remote_root", m.remote_root}, {"entries", entries}};
  if (!m.remote_epoch.empty()) {
    doc["remote_epoch"] = m.remote_epoch;
    doc["remote_generation"] = m.remote_generation;
  }
  return doc.dump();
}

std::string random_text(std::mt19937_64& rng, bool utf8_only) {
  static const std::vector<std::string> pieces = {"a", "Z", "0", " ", "/", ".", "\"", "\\", "\n", "\t", "\x01", "\x1f",
                                                  "\x7f", "é", "€", "日本", "😀", "\b", "\f", "\r"};
  static const std::vector<std::string> broken = {"\x80", "\xff", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                                                  "\xe2\x82", "\xf0\x9f\x98", "\xc3"};
  std::string s;
  const int n = 1 + static_cast<int>(rng() % 8);
  for (int i = 0; i < n; ++i) {
    if (!utf8_only && rng() % 6 == 0) s += broken[rng() % broken.size()];
    else s += pieces[rng() % pieces.size()];
  }
  return s;
}

Manifest random_manifest(std::mt19937_64& rng, bool utf8_only) {
  Manifest m;
  m.remote_root = "~/proj \"x\"";
  if (rng() % 2) {
    m.remote_epoch = "e0ab895289aa4af1f4ec61c573e54af5";
    m.remote_generation = rng();
  }
  for (int i = 0; i < 200; ++i) {
    FileMeta meta;
    meta.kind = static_cast<EntryKind>(rng() % 3);
    meta.mode = static_cast<std::uint32_t>(rng() % 07777);
    meta.mtime_ns = static_cast<std::int64_t>(rng()) >> (rng() % 2);
    if (meta.kind == EntryKind::file) {
      meta.size = rng() >> (rng() % 64);
      if (rng() % 4) {
        ferry::delta::Hash128 h{};
        for (auto& b : h) b = static_cast<std::uint8_t>(rng());
        meta.hash = h;
      }
    }
    if (meta.kind == EntryKind::symlink) {
      meta.link_target = random_text(rng, utf8_only);
      meta.size = meta.link_target.size();
    }
    m.entries.emplace(random_text(rng, utf8_only), meta);
  }
  return m;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_same_bytes_as_the_dom_for_utf8_manifests) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 50; ++round) {
    const Manifest m = random_manifest(rng, true);
    BOOST_TEST_CONTEXT("round " << round) {
      const std::string mine = manifest_to_json(m);
      BOOST_TEST(mine == dom_dump(m));
      auto back = manifest_from_json(mine);
      BOOST_REQUIRE(back.has_value());
      BOOST_TEST((back->entries == m.entries));
      BOOST_TEST(back->remote_epoch == m.remote_epoch);
      BOOST_TEST(back->remote_generation == m.remote_generation);
    }
  }
  Manifest empty;
  BOOST_TEST(manifest_to_json(empty) == dom_dump(empty));
}

BOOST_AUTO_TEST_CASE(names_and_targets_that_are_not_utf8_round_trip) {
  std::mt19937_64 rng(8);
  std::size_t hexed = 0;
  for (int round = 0; round < 50; ++round) {
    const Manifest m = random_manifest(rng, false);
    const std::string text = manifest_to_json(m);
    BOOST_TEST_CONTEXT("round " << round) {
      BOOST_TEST(!nlohmann::json::parse(text, nullptr, false).is_discarded());  // strict UTF-8 JSON
      auto back = manifest_from_json(text);
      BOOST_REQUIRE_MESSAGE(back.has_value(), (back ? "" : back.error()));
      BOOST_TEST((back->entries == m.entries));
      hexed += nlohmann::json::parse(text).value("entries_hex", nlohmann::json::object()).size();
    }
  }
  BOOST_TEST(hexed > 100u);  // the broken sequences did take the hex path
  // A valid name never does: the hex object is absent.
  Manifest ok;
  ok.entries["日本/é.py"] = FileMeta{};
  BOOST_TEST(manifest_to_json(ok).find("entries_hex") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(bad_hex_entries_are_refused) {
  const std::string base = R"({"version":1,"entries":{},"entries_hex":{)";
  BOOST_TEST(!manifest_from_json(base + R"("zz":{"kind":"dir","mode":493,"mtime_ns":1}}})").has_value());
  BOOST_TEST(!manifest_from_json(base + R"("abc":{"kind":"dir","mode":493,"mtime_ns":1}}})").has_value());
  BOOST_TEST(!manifest_from_json(base + R"("61":{"kind":"symlink","mode":0,"mtime_ns":1,"target":"q"}}})").has_value());
  BOOST_TEST(!manifest_from_json(R"({"version":1,"entries":{},"entries_hex":[]})").has_value());
  auto good = manifest_from_json(base + R"("ff":{"kind":"symlink","mode":0,"mtime_ns":1,"target":"2e2e"}}})");
  BOOST_REQUIRE(good.has_value());
  BOOST_TEST(good->entries.at("\xff").link_target == "..");
}
