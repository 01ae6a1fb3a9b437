// protocol/sync_wire and protocol/payload_codec: every sync/* message survives a round trip,
// encodes to the very CBOR bytes the hand-written agent and engine produced (older helpers and
// agents see no change), and bad params name the field that is wrong.
#define BOOST_TEST_MODULE sync_wire
#include <boost/test/unit_test.hpp>

#include <numeric>

#include "protocol/payload_codec.hpp"
#include "protocol/sync_wire.hpp"

namespace wire = ferry::protocol::sync_wire;
using ferry::protocol::DecodeError;
using nlohmann::json;

namespace {

json bin(std::vector<std::uint8_t> b) { return json::binary_t(std::move(b)); }
wire::Hash128 hash_of(std::uint8_t seed) {
  wire::Hash128 h{};
  std::iota(h.begin(), h.end(), seed);
  return h;
}
std::vector<std::uint8_t> hash_bytes(std::uint8_t seed) {
  auto h = hash_of(seed);
  return {h.begin(), h.end()};
}

// Encodes, decodes, encodes again: the two encodings must be the same CBOR bytes.
template <class T>
T round_trip(const T& value) {
  const json first = to_json(value);
  T back{};
  auto err = from_json(first, back, "");
  BOOST_TEST_REQUIRE(!err.has_value(), (err ? err->to_string() : ""));
  BOOST_TEST(json::to_cbor(to_json(back)) == json::to_cbor(first));
  return back;
}

template <class T>
std::string decode_error(const json& j) {
  T out{};
  auto err = from_json(j, out, "");
  return err ? err->to_string() : "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(method_names_are_the_documented_ones) {
  BOOST_TEST(wire::kAllMethods.size() == 17u);
  BOOST_TEST(wire::method::kPrepareDelta == "sync/prepareDelta");
  BOOST_TEST(!wire::is_mutating(wire::method::kPrepareDelta));
  BOOST_TEST(wire::method::kReadDelta == "sync/readDelta");
  BOOST_TEST(wire::allows_source(wire::method::kRead));
  BOOST_TEST(!wire::allows_source(wire::method::kWriteBatch));
  BOOST_TEST(wire::is_mutating(wire::method::kFileCommit));
  BOOST_TEST(!wire::is_mutating(wire::method::kFileAppend));
}

BOOST_AUTO_TEST_CASE(list_rows_are_the_old_arrays_byte_for_byte) {
  wire::ListResult r;
  r.entries.push_back({"a/b.py", 0, 0644, 12, 1'700'000'000'123'456'789LL, "", hash_of(1)});
  r.entries.push_back({"a", 1, 0755, 0, 5, "", std::nullopt});
  r.entries.push_back({"l", 2, 0777, 3, -7, "a/b", std::nullopt});
  r.swept = 2;
  r.listed = 3;
  r.other_filesystems = std::vector<std::string>{"mnt"};
  r.cursor = 4;
  // What sync_methods.cpp's if-chain built by hand.
  json legacy{{"entries", json::array({json::array({"a/b.py", 0, 0644u, 12u, 1'700'000'000'123'456'789LL, "", bin(hash_bytes(1))}),
                                       json::array({"a", 1, 0755u, 0u, 5LL, "", nullptr}),
                                       json::array({"l", 2, 0777u, 3u, -7LL, "a/b", nullptr})})},
              {"swept", 2u},
              {"listed", 3u},
              {"otherFilesystems", json::array({"mnt"})},
              {"cursor", 4}};
  BOOST_TEST(json::to_cbor(to_json(r)) == json::to_cbor(legacy));
  auto back = round_trip(r);
  BOOST_TEST_REQUIRE(back.entries.size() == 3u);
  BOOST_TEST(back.entries[0].hash.has_value());
  BOOST_TEST(!back.entries[1].hash.has_value());
  BOOST_TEST(back.entries[2].link_target == "a/b");
  BOOST_TEST(back.entries[0].mtime_ns == 1'700'000'000'123'456'789LL);
}

BOOST_AUTO_TEST_CASE(engine_requests_encode_as_before) {
  // sync_engine.cpp's fileBegin request, built by hand there.
  wire::FileBeginParams b;
  b.where = wire::Where::at_base("proj");
  b.path = "big.bin";
  b.attrs = {1 << 20, hash_of(9), 0600, 42};
  b.expect = wire::Expect{true, 10, 11};
  json legacy{{"base", "proj"}, {"path", "big.bin"}, {"size", 1 << 20}, {"hash", bin(hash_bytes(9))},
              {"mode", 0600},   {"mtimeNs", 42},     {"expect", {{"exists", true}, {"size", 10}, {"mtimeNs", 11}}}};
  BOOST_TEST(json::to_cbor(to_json(b)) == json::to_cbor(legacy));
  round_trip(b);

  // A placed append (bytes written by a bulk lane) and a data append.
  wire::FileAppendParams a;
  a.where = wire::Where::at_base("proj");
  a.handle = 3;
  a.offset = 4096;
  a.raw_size = 100;
  a.placed = true;
  BOOST_TEST(json::to_cbor(to_json(a)) ==
             json::to_cbor(json{{"base", "proj"}, {"handle", 3}, {"offset", 4096}, {"rawSize", 100}, {"placed", true}}));
  round_trip(a);
  a.placed = false;
  a.data = std::vector<std::uint8_t>{1, 2, 3};
  BOOST_TEST(json::to_cbor(to_json(a)) ==
             json::to_cbor(json{{"base", "proj"}, {"handle", 3}, {"offset", 4096}, {"rawSize", 100}, {"data", bin({1, 2, 3})}}));

  // Pull's reads from a read-only source name the source, not a base.
  wire::ReadParams r{wire::Where::at_source("/usr/lib/python3/dist-packages"), "x.py", 0, 8u << 20};
  BOOST_TEST(json::to_cbor(to_json(r)) == json::to_cbor(json{{"source", "/usr/lib/python3/dist-packages"},
                                                              {"path", "x.py"}, {"offset", 0}, {"length", 8u << 20}}));
  round_trip(r);
}

BOOST_AUTO_TEST_CASE(every_message_round_trips) {
  const auto at = wire::Where::at_base("p");
  round_trip(wire::StateParams{at});
  round_trip(wire::StateResult{"epoch-1", 7});
  wire::ListParams lp;
  lp.where = at;
  lp.known = std::vector<std::string>{"a", "b"};
  lp.only = std::vector<std::string>{"c"};
  lp.hash_under = std::vector<std::string>{"."};
  lp.sweep = true;
  lp.page_entries = 10;
  lp.page_ms = 100;
  round_trip(lp);
  round_trip(wire::ReadResult{"f", 8, 3, {9, 9}, false, 11, 12, 0644, true});
  BOOST_TEST(round_trip(wire::ReadResult{"f", 0, 2, {9, 9}, true, 2, 12, 0644, true}).stored);
  wire::ReadDeltaParams rd{at, "f", {1, 2}, std::vector<wire::Bytes>{{3}, {4}}, true, 99};
  round_trip(rd);
  wire::ReadDeltaResult rr;
  rr.path = "f";
  rr.hash = hash_of(2);
  rr.delta = wire::Bytes{5, 6};
  rr.delta_size = 20;
  rr.literal_bytes = 4;
  rr.copied_bytes = 16;
  BOOST_TEST(round_trip(rr).delta_size == 20u);
  rr.delta.reset();
  rr.ranges = std::vector<wire::Range>{{0, 10}, {20, 5}};
  BOOST_TEST(round_trip(rr).ranges->at(1).second == 5u);
  round_trip(wire::SignatureParams{at, "f", 65536, 8, std::vector<wire::Range>{{0, 100}}});
  round_trip(wire::SignatureResult{std::nullopt, std::vector<wire::Bytes>{{1}, {2}}});
  round_trip(wire::ApplyDeltaParams{at, "f", {3, hash_of(3), 0644, 1}, std::nullopt, {7}, 30});
  BOOST_TEST(round_trip(wire::PrepareDeltaParams{at, "f", wire::Expect{true, 3, 4}}).expect->mtime_ns == 4);
  BOOST_TEST(round_trip(wire::PrepareDeltaParams{at, "f", std::nullopt, true}).cancel);
  BOOST_TEST(round_trip(wire::PrepareDeltaResult{true}).started);
  wire::WriteBatchParams wb{at, {wire::WriteFile{"x", {1, hash_of(4), 0644, 2}, wire::Expect{}, {1}, std::nullopt}}};
  round_trip(wb);
  round_trip(wire::FileBeginResult{5, ".x.ferry-tmp"});
  round_trip(wire::FilePartParams{at, "x", ".x.tmp", 4096, 10, wire::Bytes{1}});
  BOOST_TEST(round_trip(wire::FilePartParams{at, "x", ".x.tmp", 0, 1, wire::Bytes{1}, true}).stored);
  BOOST_TEST(round_trip(wire::FileAppendParams{at, 5, 0, 1, false, wire::Bytes{1}, true}).stored);
  round_trip(wire::FileAppendResult{4096});
  round_trip(wire::FileHandleParams{at, 5});
  round_trip(wire::MkdirParams{at, {{"d", 0700}, {"e", std::nullopt}}});
  round_trip(wire::SymlinkParams{at, {{"l", "../t"}}});
  round_trip(wire::SetAttrsParams{at, {{"f", 0600, 5}, {"d", 0700, std::nullopt}}});
  wire::DeleteParams d{at, {"a", "b"}, {"d"}, {{"a", wire::Expect{true, 1, 2}}}};
  BOOST_TEST(round_trip(d).expect.at("a").size == 1u);
  wire::PathResults pr{{{"a", true, {}, {}, {}}, {"b", false, "no_space", "full", json{{"path", "/"}}}}, 10};
  BOOST_TEST(*round_trip(pr).results[1].code == "no_space");
}

// A push's chunk is borrowed from the decoded message, not copied out of it; a borrowed
// payload encodes again as the same bytes, and one built from Bytes owns them.
BOOST_AUTO_TEST_CASE(decoded_payloads_borrow_the_message_bytes) {
  const wire::Bytes chunk(1000, 7);
  const json j = to_json(wire::FilePartParams{wire::Where::at_base("p"), "x", ".x.tmp", 0, chunk.size(), chunk, true});
  wire::FilePartParams part;
  BOOST_TEST_REQUIRE(!from_json(j, part, "").has_value());
  BOOST_TEST(static_cast<const void*>(part.data.bytes().data()) == static_cast<const void*>(j["data"].get_binary().data()));
  BOOST_TEST(part.data.size() == chunk.size());
  BOOST_TEST(to_json(part)["data"].get_binary() == chunk, boost::test_tools::per_element());

  const json a = to_json(wire::FileAppendParams{wire::Where::at_base("p"), 1, 0, chunk.size(), false, chunk, true});
  wire::FileAppendParams append;
  BOOST_TEST_REQUIRE(!from_json(a, append, "").has_value());
  BOOST_TEST_REQUIRE(append.data.has_value());
  BOOST_TEST(static_cast<const void*>(append.data->bytes().data()) == static_cast<const void*>(a["data"].get_binary().data()));

  wire::Payload owned(wire::Bytes{1, 2, 3});
  const auto* at = owned.bytes().data();
  BOOST_TEST(static_cast<const void*>(std::move(owned).take().data()) == static_cast<const void*>(at));  // moved out, not copied
}

BOOST_AUTO_TEST_CASE(bad_params_name_the_field) {
  BOOST_TEST(decode_error<wire::ReadParams>(json{{"base", "p"}}) == "/path: is required");
  BOOST_TEST(decode_error<wire::ReadParams>(json{{"path", 3}}) == "/path: expected a string");
  BOOST_TEST(decode_error<wire::ReadParams>(json{{"path", "f"}, {"offset", -1}}) == "/offset: must not be negative");
  BOOST_TEST(decode_error<wire::ReadParams>(json::array()) == "/: expected an object");
  BOOST_TEST(decode_error<wire::FileBeginParams>(json{{"path", "f"}, {"size", 1}, {"hash", bin({1, 2})}, {"mode", 0}, {"mtimeNs", 0}}) ==
             "/hash: expected 16 bytes (xxh3-128)");
  BOOST_TEST(decode_error<wire::FileAppendParams>(json{{"handle", 1}, {"rawSize", 1}}) == "/data: is required (unless placed)");
  BOOST_TEST(decode_error<wire::FileAppendParams>(json{{"handle", 1}, {"rawSize", 1}, {"placed", true}}) ==
             "/offset: is required with placed bytes");
  BOOST_TEST(decode_error<wire::MkdirParams>(json{{"dirs", json::array({json{{"mode", 1}}})}}) == "/dirs/0/path: is required");
  BOOST_TEST(decode_error<wire::SignatureParams>(json{{"path", "f"}, {"ranges", json::array({json::array({1})})}}) ==
             "/ranges/0: expected an [offset, length] pair");
  BOOST_TEST(decode_error<wire::DeleteParams>(json{{"expect", json{{"a", json{{"exists", "yes"}}}}}}) ==
             "/expect/a/exists: expected a boolean");
  // Modes keep their permission bits only, as the agent always did.
  wire::SetAttrsEntry e;
  BOOST_TEST(!from_json(json{{"path", "f"}, {"mode", 0100644}}, e, "").has_value());
  BOOST_TEST(e.mode == 0644u);
}

BOOST_AUTO_TEST_CASE(a_bad_file_in_a_batch_is_its_own_failure) {
  json files = json::array({json{{"path", "ok"}, {"size", 1}, {"hash", bin(hash_bytes(1))}, {"mode", 0644}, {"mtimeNs", 0}, {"data", bin({1})}},
                            json{{"path", "bad"}, {"size", 1}, {"mode", 0644}, {"mtimeNs", 0}, {"data", bin({1})}}});
  wire::WriteBatchParams p;
  BOOST_TEST_REQUIRE(!from_json(json{{"base", "p"}, {"files", files}}, p, "").has_value());
  BOOST_TEST_REQUIRE(p.files.size() == 2u);
  BOOST_TEST(!p.files[0].invalid.has_value());
  BOOST_TEST_REQUIRE(p.files[1].invalid.has_value());
  BOOST_TEST(p.files[1].path == "bad");
  BOOST_TEST(*p.files[1].invalid == "'hash' is required");
  BOOST_TEST(decode_error<wire::WriteBatchParams>(json{{"base", "p"}}) == "/files: is required");
}

BOOST_AUTO_TEST_CASE(payload_codec_round_trips_and_refuses_lies) {
  std::vector<std::uint8_t> raw(100'000);
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<std::uint8_t>(i * 7 % 13);
  auto packed = ferry::protocol::compress_payload(raw.data(), raw.size());
  BOOST_TEST(!packed.empty());
  BOOST_TEST(packed.size() < raw.size());
  auto back = ferry::protocol::decompress_payload(packed.data(), packed.size(), raw.size());
  BOOST_TEST_REQUIRE(back.has_value());
  BOOST_TEST((*back == raw));
  // A declared size that is not the frame's, one over the limit, and bytes that are no frame.
  auto wrong = ferry::protocol::decompress_payload(packed.data(), packed.size(), raw.size() - 1);
  BOOST_TEST_REQUIRE(!wrong.has_value());
  BOOST_TEST(wrong.error().find("declared") != std::string::npos, wrong.error());
  BOOST_TEST(!ferry::protocol::decompress_payload(packed.data(), packed.size(), raw.size(), 10).has_value());
  std::vector<std::uint8_t> junk{1, 2, 3, 4, 5};
  BOOST_TEST(ferry::protocol::decompress_payload(junk.data(), junk.size(), 5).error() == "not a zstd frame");
  // Into a kept buffer: the same bytes, its pages reused for the next payload.
  std::vector<std::uint8_t> kept;
  BOOST_TEST_REQUIRE(ferry::protocol::decompress_payload_into(packed.data(), packed.size(), raw.size(), kept).has_value());
  BOOST_TEST((kept == raw));
  const auto* pages = kept.data();
  BOOST_TEST_REQUIRE(ferry::protocol::decompress_payload_into(packed.data(), packed.size(), raw.size(), kept).has_value());
  BOOST_TEST((kept.data() == pages));
  BOOST_TEST(!ferry::protocol::decompress_payload_into(junk.data(), junk.size(), 5, kept).has_value());
  // Compressed in a kept buffer: the same frame at its own size, the buffer's pages reused.
  std::vector<std::uint8_t> scratch;
  auto in_scratch = ferry::protocol::compress_payload(raw.data(), raw.size(), ferry::protocol::kPayloadLevel, scratch);
  BOOST_TEST((in_scratch == packed));
  BOOST_TEST(in_scratch.capacity() < scratch.size());
  const auto* scratch_pages = scratch.data();
  BOOST_TEST((ferry::protocol::compress_payload(raw.data(), raw.size(), ferry::protocol::kPayloadLevel, scratch) == packed));
  BOOST_TEST((scratch.data() == scratch_pages));
  // Empty payloads (an empty file) are one valid frame.
  auto empty = ferry::protocol::compress_payload(nullptr, 0);
  BOOST_TEST(ferry::protocol::decompress_payload(empty.data(), empty.size(), 0).has_value());
}
