// The agent wire codec: CBOR bodies in LSP frames, binary payloads, hostile bodies, magic line.
#define BOOST_TEST_MODULE agent_wire
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <random>

#include "protocol/agent_wire.hpp"

using namespace ferry::protocol;

namespace {

Message round_trip(const Message& m) {
  std::string frame = encode_agent_frame(m);
  FrameDecoder decoder(agent_frame_limits());
  // Byte by byte for the header, then the rest: the decoder must not care how bytes arrive.
  std::size_t split = std::min<std::size_t>(frame.size(), 40);
  for (std::size_t i = 0; i < split; ++i) {
    decoder.feed(std::string_view(frame).substr(i, 1));
    if (i + 1 < split) BOOST_REQUIRE(!decoder.next().has_value());
  }
  decoder.feed(std::string_view(frame).substr(split));
  auto body = decoder.next();
  BOOST_REQUIRE(body.has_value());
  BOOST_REQUIRE(body->has_value());
  auto decoded = decode_agent_body(**body);
  BOOST_REQUIRE(decoded.has_value());
  BOOST_TEST(!decoder.mid_frame());
  return *decoded;
}

std::string cbor_of(const json& j) {
  auto v = json::to_cbor(j);
  return std::string(v.begin(), v.end());
}

}  // namespace

BOOST_AUTO_TEST_CASE(messages_round_trip) {
  std::vector<Message> messages = {
      Request{7, "fs/stat", json{{"path", "a/b c/ü.txt"}}},
      Request{"str-id", "agent/ping", nullptr},
      Notification{"$/progress", json{{"token", 1}, {"value", {{"kind", "report"}, {"percentage", 50}}}}},
      make_result(7, json{{"exists", true}, {"size", 1ll << 40}, {"mtimeNs", 1732900000123456789ll}}),
      make_error(9, error_code::kAgentVersionMismatch, "agent speaks protocol 2, this ferry speaks 1",
                 json{{"agentProtocolVersion", 2}}),
  };
  for (const auto& m : messages) BOOST_TEST(to_json(round_trip(m)) == to_json(m));
}

BOOST_AUTO_TEST_CASE(binary_payload_travels_raw) {
  std::vector<std::uint8_t> bytes(1 << 20);
  std::mt19937 rng(42);
  for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
  for (int i = 0; i < 256; ++i) bytes[i] = static_cast<std::uint8_t>(i);
  Request r{1, "fs/write", json{{"path", "x.bin"}, {"data", json::binary(bytes)}}};
  std::string frame = encode_agent_frame(r);
  // CBOR carries bytes as bytes: no base64 growth.
  BOOST_TEST(frame.size() < bytes.size() + 128);
  auto back = std::get<Request>(round_trip(r));
  BOOST_REQUIRE(back.params["data"].is_binary());
  BOOST_TEST(back.params["data"].get_binary() == bytes, boost::test_tools::per_element());
}

// The pieced frame (header and small fields in one buffer, big strings in place) is byte for
// byte the frame the string encoder makes, and moving a message into it carries the same JSON
// as copying it, for every kind of message and header width.
BOOST_AUTO_TEST_CASE(pieced_frames_match_the_string_encoder_and_moving_matches_copying) {
  std::vector<std::uint8_t> bytes(3 << 20);
  std::mt19937 rng(7);
  for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
  std::vector<Message> messages = {
      Request{1, "sync/filePart", json{{"path", "ckpt.bin"}, {"offset", 8 << 20}, {"data", json::binary(bytes)}}},
      Request{2, "agent/ping", nullptr},
      Notification{"run/output", json{{"data", json::binary(std::vector<std::uint8_t>(bytes.begin(), bytes.begin() + 10))}}},
      make_result(3, json{{"files", json::array({json{{"data", json::binary(bytes)}}, json{{"path", std::string(70000, 'p')}}})}}),
      make_error(4, error_code::kAgentVersionMismatch, "no", json{{"agentProtocolVersion", 2}}),
  };
  for (const auto& m : messages) {
    const std::string expected = encode_frame(cbor_of(to_json(m)));
    BOOST_TEST((encode_agent_frame_buffer(to_json(m)).bytes() == expected));
    Message moved = m;
    const AgentFrame frame = encode_agent_frame_buffer(std::move(moved));
    BOOST_TEST((frame.bytes() == expected));
    BOOST_TEST(encode_agent_frame(m) == expected);
  }
  // A frame decodes from the one buffer too.
  FrameDecoder decoder(agent_frame_limits());
  decoder.feed(encode_agent_frame_buffer(Message(messages[0])).bytes());
  auto body = decoder.next();
  BOOST_REQUIRE(body.has_value());
  BOOST_REQUIRE(body->has_value());
  auto decoded = decode_agent_body(**body);
  BOOST_REQUIRE(decoded.has_value());
  const std::vector<std::uint8_t>& got = std::get<Request>(*decoded).params.at("data").get_binary();
  BOOST_TEST((got == bytes));
}

// A file chunk is not copied into its frame: its piece points at the json's own bytes (the
// caller's value, or the moved message the frame keeps, also after the frame is moved); strings
// under the limit are copied into the frame's buffer, the header joined to what precedes them.
BOOST_AUTO_TEST_CASE(big_strings_are_pieces_of_the_json_not_copies) {
  const std::vector<std::uint8_t> chunk(kFramePieceAbove, 0xab);
  const json value = json{{"jsonrpc", "2.0"}, {"id", 1}, {"result", json{{"data", json::binary(chunk)}, {"eof", true}}}};
  const AgentFrame frame = encode_agent_frame_buffer(value);
  const auto* in_json = reinterpret_cast<const char*>(value["result"]["data"].get_binary().data());
  BOOST_REQUIRE_EQUAL(frame.pieces().size(), 3u);  // header + fields before, the chunk, the fields after
  BOOST_TEST(static_cast<const void*>(frame.pieces()[1].data()) == static_cast<const void*>(in_json));  // addresses, not C strings
  BOOST_TEST(frame.pieces()[1].size() == chunk.size());
  BOOST_TEST(frame.pieces()[0].starts_with("Content-Length: "));
  BOOST_TEST(frame.size() == frame.bytes().size());

  Message moved = make_result(2, json{{"data", json::binary(chunk)}});
  const std::string expected = encode_frame(cbor_of(to_json(Message(moved))));
  AgentFrame kept = encode_agent_frame_buffer(std::move(moved));
  const char* at = kept.pieces().back().data();
  const AgentFrame again = std::move(kept);
  BOOST_TEST(static_cast<const void*>(again.pieces().back().data()) == static_cast<const void*>(at));  // still the kept json's bytes
  BOOST_TEST((again.bytes() == expected));

  const std::vector<std::uint8_t> small(kFramePieceAbove - 1, 0xcd);
  BOOST_TEST(encode_agent_frame_buffer(json{{"data", json::binary(small)}}).pieces().size() == 1u);
}

BOOST_AUTO_TEST_CASE(garbage_bodies_are_rejected_cleanly) {
  auto parse_error = [](std::string_view body) {
    auto r = decode_agent_body(body);
    BOOST_REQUIRE(!r.has_value());
    return r.error();
  };
  BOOST_TEST(parse_error("").error.code == error_code::kParseError);
  BOOST_TEST(parse_error("{\"jsonrpc\":\"2.0\"}").error.code == error_code::kParseError);  // JSON text is not CBOR
  BOOST_TEST(parse_error("\xff\xff\xff").error.code == error_code::kParseError);
  std::string good = cbor_of(to_json(Request{1, "agent/ping", nullptr}));
  BOOST_TEST(parse_error(good.substr(0, good.size() - 3)).error.code == error_code::kParseError);  // truncated
  BOOST_TEST(parse_error(good + "x").error.code == error_code::kParseError);                      // trailing bytes
  // Well-formed CBOR that is not a message.
  BOOST_TEST(parse_error(cbor_of(json(5))).error.code == error_code::kInvalidRequest);
  BOOST_TEST(parse_error(cbor_of(json::array({1, 2}))).error.code == error_code::kInvalidRequest);
  auto no_version = parse_error(cbor_of(json{{"id", 3}, {"method", "x"}}));
  BOOST_TEST(no_version.error.code == error_code::kInvalidRequest);
  BOOST_TEST(no_version.id == 3);  // the id survives so the agent can answer it
  // Deep nesting must not overflow the stack: 1M nested one-element arrays.
  std::string deep(1'000'000, '\x81');
  deep += '\x01';
  auto e = parse_error(deep);
  BOOST_TEST(e.error.message.find("deeper") != std::string::npos, e.error.message);
  // A declared huge array length with no elements behind it.
  BOOST_TEST(parse_error(std::string("\x9b\x00\x00\x00\x10\x00\x00\x00\x00", 9)).error.code == error_code::kParseError);
  // Random bytes never crash.
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 64, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    (void)decode_agent_body(junk);
  }
}

BOOST_AUTO_TEST_CASE(agent_frames_allow_large_bodies) {
  BOOST_TEST(agent_frame_limits().max_body == 256u << 20);
  FrameDecoder decoder(agent_frame_limits());
  decoder.feed("Content-Length: 268435457\r\n\r\n");
  auto issue = decoder.next();
  BOOST_REQUIRE(issue.has_value());
  BOOST_REQUIRE(!issue->has_value());
  BOOST_TEST((issue->error().kind == FrameIssueKind::body_too_large));
}

BOOST_AUTO_TEST_CASE(magic_line) {
  BOOST_TEST(agent_magic_line(1, "0.1.0") == "FERRY-AGENT 1 0.1.0");
  auto m = parse_agent_magic("FERRY-AGENT 12 1.2.3-dev\r");
  BOOST_REQUIRE(m.has_value());
  BOOST_TEST(m->protocol_version == 12);
  BOOST_TEST(m->agent_version == "1.2.3-dev");
  BOOST_TEST(!parse_agent_magic("FERRY-AGENT x 1.0").has_value());
  BOOST_TEST(!parse_agent_magic("FERRY-AGENT 1").has_value());
  BOOST_TEST(!parse_agent_magic("FERRY-AGENT -1 1.0").has_value());
  BOOST_TEST(!parse_agent_magic("FERRY-AGENT 1 a b").has_value());
}

BOOST_AUTO_TEST_CASE(preamble_noise_is_skipped) {
  std::string noise = "Welcome to Ubuntu 22.04\r\n\n * Documentation: https://help.ubuntu.com\nconda: base activated\n";
  BOOST_TEST(!scan_agent_preamble(noise).has_value());                   // more bytes needed
  BOOST_TEST(!scan_agent_preamble(noise + "FERRY-AGENT 1 0.").has_value());  // magic not complete yet
  std::string all = noise + "FERRY-AGENT 1 0.1.0\nContent-Length: 3\r\n\r\nabc";
  auto scan = scan_agent_preamble(all);
  BOOST_REQUIRE(scan.has_value());
  BOOST_REQUIRE(scan->has_value());
  BOOST_TEST((*scan)->magic.agent_version == "0.1.0");
  BOOST_TEST(all.substr((*scan)->consumed) == "Content-Length: 3\r\n\r\nabc");
  // After a prompt printed without a newline.
  auto prompt = scan_agent_preamble("user@box:~$ FERRY-AGENT 2 9.9\n");
  BOOST_REQUIRE(prompt && prompt->has_value());
  BOOST_TEST((*prompt)->magic.protocol_version == 2);
  // Bounded: endless noise is an error, not an unbounded buffer.
  std::string endless(kMaxAgentPreamble + 10, 'x');
  auto over = scan_agent_preamble(endless);
  BOOST_REQUIRE(over.has_value());
  BOOST_TEST(!over->has_value());
  auto bad = scan_agent_preamble("FERRY-AGENT one 1.0\n");
  BOOST_REQUIRE(bad.has_value());
  BOOST_TEST(!bad->has_value());
}

// Large byte strings skip nlohmann's byte-at-a-time copy (lifted out before the parse and put
// back); the decoded message must be exactly what the plain parse gives, wherever they sit.
BOOST_AUTO_TEST_CASE(large_byte_strings_decode_exactly) {
  std::mt19937_64 rng(5);
  auto bytes = [&](std::size_t n) {
    std::vector<std::uint8_t> b(n);
    for (auto& x : b) x = static_cast<std::uint8_t>(rng());
    return json::binary_t(std::move(b));
  };
  json files = json::array();
  for (std::size_t n : {0u, 10u, 63u, 64u, 65u, 4095u, 4096u, 70000u, 3u, 300000u})
    files.push_back({{"path", std::string("f").append(std::to_string(n))}, {"data", bytes(n)}, {"hash", bytes(16)}, {"size", n}});
  json params{{"base", "proj"}, {"files", files}, {"nested", {{"a", json::array({bytes(5000), 1.5, nullptr, bytes(7)})}}}};
  Message m = Request{7, "sync/writeBatch", params};
  Message back = round_trip(m);
  const auto* req = std::get_if<Request>(&back);
  BOOST_REQUIRE(req != nullptr);
  BOOST_TEST((req->params == params));
  // The same body, truncated anywhere, or with a byte after it, is still rejected.
  const std::string body = cbor_of(to_json(m));
  for (std::size_t cut : {body.size() - 1, body.size() / 2, std::size_t{20}})
    BOOST_TEST(!decode_agent_body(std::string_view(body).substr(0, cut)).has_value());
  BOOST_TEST(!decode_agent_body(body + '\0').has_value());
}

// A reply's chunk found in the first bytes of its body (find_byte_string), taken out as the
// frame arrives and decoded back from its own buffer: the message holds that very buffer (moved,
// not copied), and the rest of the message is as sent. Smaller strings before it are counted
// in the index, and a prefix without a big string, or cut inside a head, finds nothing.
BOOST_AUTO_TEST_CASE(a_chunk_taken_out_of_the_frame_decodes_from_its_own_buffer) {
  std::vector<std::uint8_t> chunk(3u << 20);
  std::mt19937 rng(9);
  for (auto& b : chunk) b = static_cast<std::uint8_t>(rng());
  const json small = json::binary(std::vector<std::uint8_t>(100, 7));
  Message m = make_result(12, json{{"a", small}, {"data", json::binary(chunk)}, {"eof", false}, {"size", 1ll << 33}});
  const std::string frame = encode_agent_frame(m);
  const std::size_t header = frame.find("\r\n\r\n") + 4;
  const std::string_view body = std::string_view(frame).substr(header);

  auto at = find_byte_string(body.substr(0, 4096), 1u << 20);
  BOOST_REQUIRE(at.has_value());
  BOOST_TEST(at->index == 1u);  // "a" comes first
  BOOST_TEST(at->size == chunk.size());
  BOOST_TEST(std::memcmp(body.data() + at->data, chunk.data(), 64) == 0);
  BOOST_TEST(!find_byte_string(body.substr(0, at->header + 2), 1u << 20).has_value());  // its head cut short
  BOOST_TEST(!find_byte_string(body.substr(0, 4096), 4u << 20).has_value());           // none that big

  FrameDecoder d(agent_frame_limits());
  d.feed(std::string_view(frame).substr(0, header + 4096));
  BOOST_REQUIRE(!d.next_view().has_value());
  std::vector<std::uint8_t> own(chunk.size());
  const std::uint8_t* own_data = own.data();
  auto got = d.divert(at->header, at->data, at->size, '\x40', reinterpret_cast<char*>(own.data()));
  BOOST_REQUIRE(got.has_value());
  std::memcpy(own.data() + *got, body.data() + at->data + *got, chunk.size() - *got);
  d.feed(body.substr(at->data + chunk.size()));
  auto rest = d.next_view();
  BOOST_REQUIRE((rest && rest->has_value()));
  auto decoded = decode_agent_body(**rest, OwnedByteString{at->index, std::move(own)});
  BOOST_REQUIRE(decoded.has_value());
  const auto& result = std::get<json>(std::get<Response>(*decoded).outcome);
  BOOST_TEST(result.at("data").get_binary().data() == own_data);  // the buffer itself
  BOOST_TEST((result == to_json(m).at("result")));
}
