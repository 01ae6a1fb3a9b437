// Framing: split frames, Content-Type, oversize skip and resync, malformed headers, and bytes
// diverted out of a frame still arriving.
#define BOOST_TEST_MODULE framing
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "protocol/framing.hpp"

using namespace ferry::protocol;

BOOST_AUTO_TEST_CASE(decodes_frames_fed_byte_by_byte) {
  std::string wire = encode_frame("{\"a\":1}") + encode_frame("[]", "application/vscode-jsonrpc; charset=utf-8");
  FrameDecoder d;
  std::vector<std::string> got;
  for (char c : wire) {
    d.feed(std::string_view(&c, 1));
    while (auto f = d.next()) {
      BOOST_REQUIRE(f->has_value());
      got.push_back(**f);
    }
  }
  BOOST_TEST(got.size() == 2u);
  BOOST_TEST(got[0] == "{\"a\":1}");
  BOOST_TEST(got[1] == "[]");
  BOOST_TEST(!d.mid_frame());
}

// Big bodies fed in pipe-sized pieces (the decoder reserves the frame once it has the header),
// with the next frame's start in the same piece as the end of the one before.
BOOST_AUTO_TEST_CASE(big_frames_fed_in_pieces_come_out_exact) {
  std::string big(3u << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 2654435761u >> 13);
  const std::string wire = encode_frame(big) + encode_frame("{}") + encode_frame(big.substr(7, 1u << 20));
  FrameDecoder d(FrameLimits{8u << 20, 4096});
  std::vector<std::string> got;
  for (std::size_t at = 0; at < wire.size(); at += 65536 + 17) {
    d.feed(std::string_view(wire).substr(at, 65536 + 17));
    while (auto f = d.next()) {
      BOOST_REQUIRE(f->has_value());
      got.push_back(**f);
    }
  }
  BOOST_REQUIRE(got.size() == 3u);
  BOOST_TEST((got[0] == big));
  BOOST_TEST(got[1] == "{}");
  BOOST_TEST((got[2] == big.substr(7, 1u << 20)));
  BOOST_TEST(!d.mid_frame());
}

BOOST_AUTO_TEST_CASE(oversize_body_is_skipped_and_stream_resyncs) {
  FrameDecoder d(FrameLimits{.max_body = 4, .max_header = 64});
  d.feed(encode_frame("0123456789"));
  d.feed(encode_frame("ok"));
  auto f = d.next();
  BOOST_REQUIRE(f && !f->has_value());
  BOOST_TEST((f->error().kind == FrameIssueKind::body_too_large));
  BOOST_TEST(!f->error().fatal);
  auto g = d.next();
  BOOST_REQUIRE(g && g->has_value());
  BOOST_TEST(**g == "ok");
}

BOOST_AUTO_TEST_CASE(oversize_body_split_across_feeds_is_skipped) {
  FrameDecoder d(FrameLimits{.max_body = 4, .max_header = 64});
  d.feed("Content-Length: 10\r\n\r\n0123");
  auto f = d.next();
  BOOST_REQUIRE(f && !f->has_value());
  BOOST_TEST(d.mid_frame());
  d.feed("456789" + encode_frame("x"));
  auto g = d.next();
  BOOST_REQUIRE(g && g->has_value());
  BOOST_TEST(**g == "x");
}

// A declared length no peer could send is not skipped (the skip would swallow every later frame
// and the reader would wait on it for good): refused as too large, and the stream is over.
BOOST_AUTO_TEST_CASE(a_body_too_big_to_skip_ends_the_stream) {
  FrameDecoder d;
  d.feed("Content-Length: 1099511627776\r\n\r\n" + encode_frame("{}"));
  auto f = d.next();
  BOOST_REQUIRE(f && !f->has_value());
  BOOST_TEST((f->error().kind == FrameIssueKind::body_too_large));
  BOOST_TEST(f->error().fatal);
  BOOST_TEST(f->error().message.find("too large to skip") != std::string::npos);
  BOOST_TEST(d.failed());
  BOOST_TEST(!d.next());
}

BOOST_AUTO_TEST_CASE(bodies_up_to_max_skip_are_skipped_past_it_fatal) {
  for (std::size_t declared : {9u, 10u, 11u}) {
    FrameDecoder d(FrameLimits{.max_body = 4, .max_header = 64, .max_skip = 10});
    d.feed("Content-Length: " + std::to_string(declared) + "\r\n\r\n" + std::string(declared, 'x') + encode_frame("ok"));
    auto f = d.next();
    BOOST_REQUIRE(f && !f->has_value());
    BOOST_TEST((f->error().kind == FrameIssueKind::body_too_large));
    BOOST_TEST(f->error().fatal == (declared > 10));
    auto g = d.next();
    if (declared > 10) {
      BOOST_TEST(!g);
    } else {
      BOOST_REQUIRE(g && g->has_value());
      BOOST_TEST(**g == "ok");
    }
  }
}

BOOST_AUTO_TEST_CASE(malformed_headers_are_fatal) {
  for (std::string bad : {"Content-Length: abc\r\n\r\n", "Nonsense\r\n\r\n", "Content-Type: x\r\n\r\n",
                          "Content-Length: -1\r\n\r\n"}) {
    FrameDecoder d;
    d.feed(bad);
    auto f = d.next();
    BOOST_REQUIRE(f);
    BOOST_TEST(!f->has_value());
    BOOST_TEST(f->error().fatal);
    BOOST_TEST(d.failed());
  }
}

BOOST_AUTO_TEST_CASE(header_without_end_is_bounded) {
  FrameDecoder d(FrameLimits{.max_body = 100, .max_header = 32});
  d.feed(std::string(100, 'x'));
  auto f = d.next();
  BOOST_REQUIRE(f && !f->has_value());
  BOOST_TEST((f->error().kind == FrameIssueKind::header_too_long));
}

// The readers' path: bytes read straight into the decoder (fill) in odd-sized pieces, bodies
// taken as views. A body over the cap that spans fills is skipped as with feed, and every other
// body comes out exact, big ones included.
BOOST_AUTO_TEST_CASE(filled_in_pieces_and_viewed_frames_come_out_exact) {
  std::string big(3u << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 2654435761u >> 13);
  const std::string too_big(9u << 20, 'x');
  const std::string wire = encode_frame(big) + encode_frame(too_big) + encode_frame("{}") + encode_frame(big.substr(7, 1u << 20));
  FrameDecoder d(FrameLimits{8u << 20, 4096});
  std::vector<std::string> got;
  std::size_t issues = 0;
  for (std::size_t at = 0, piece = 1; at < wire.size(); piece = piece * 7 % 300007 + 1) {
    const std::size_t n = d.fill(piece, [&](char* into, std::size_t room) {
      const std::size_t k = std::min(room, wire.size() - at);
      std::memcpy(into, wire.data() + at, k);
      return k;
    });
    BOOST_REQUIRE(n > 0);
    at += n;
    while (auto f = d.next_view()) {
      if (!*f) {
        ++issues;
        BOOST_TEST((f->error().kind == FrameIssueKind::body_too_large));
        continue;
      }
      got.emplace_back(**f);
    }
  }
  BOOST_TEST(issues == 1u);
  BOOST_REQUIRE(got.size() == 3u);
  BOOST_TEST((got[0] == big));
  BOOST_TEST(got[1] == "{}");
  BOOST_TEST((got[2] == big.substr(7, 1u << 20)));
  BOOST_TEST(!d.mid_frame());
}

// A reader takes bytes out of a frame that is still arriving (divert): the part already buffered
// comes back in its buffer, it reads the rest from the stream itself, and the frame then comes
// out shorter, the taken bytes' head turned into one placeholder byte; the next frame follows
// untouched, and a divert that does not fit the frame takes nothing.
BOOST_AUTO_TEST_CASE(divert_takes_bytes_out_of_a_frame_still_arriving) {
  const std::string payload(100000, 'p');
  const std::string body = "HEAD" + std::string("[hh]") + payload + "TAIL";  // head at 4, data at 8
  const std::string wire = encode_frame(body) + encode_frame("next");
  for (std::size_t first : {std::size_t{30}, std::size_t{29} + 8, std::size_t{29} + 5000}) {
    FrameDecoder d;
    const std::size_t header = wire.find("\r\n\r\n") + 4;
    d.feed(std::string_view(wire).substr(0, std::min(first, header + body.size())));
    BOOST_REQUIRE(!d.next_view().has_value());
    auto in = d.body_in_progress();
    BOOST_REQUIRE(in.has_value());
    BOOST_TEST(in->length == body.size());
    BOOST_TEST(!in->diverted);
    std::string out(payload.size(), '\0');
    if (in->so_far.size() < 8) {
      BOOST_TEST(!d.divert(4, 8, payload.size(), 'X', out.data()).has_value());  // its start is not here yet
      continue;
    }
    BOOST_TEST(!d.divert(8, 4, payload.size(), 'X', out.data()).has_value());
    BOOST_TEST(!d.divert(4, 8, body.size(), 'X', out.data()).has_value());  // past the frame's end
    auto got = d.divert(4, 8, payload.size(), 'X', out.data());
    BOOST_REQUIRE(got.has_value());
    BOOST_TEST(*got == in->so_far.size() - 8);
    BOOST_TEST(!d.divert(4, 8, payload.size(), 'X', out.data()).has_value());  // once per frame
    BOOST_TEST(d.body_in_progress()->diverted);
    // The rest of the payload from "the stream", then the rest of the wire through the decoder.
    const std::size_t payload_end = header + 8 + payload.size();
    std::memcpy(out.data() + *got, wire.data() + header + 8 + *got, payload.size() - *got);
    d.feed(std::string_view(wire).substr(payload_end));
    auto f = d.next_view();
    BOOST_REQUIRE((f && f->has_value()));
    BOOST_TEST(**f == "HEADXTAIL");
    BOOST_TEST(out == payload);
    auto n = d.next_view();
    BOOST_REQUIRE((n && n->has_value()));
    BOOST_TEST(**n == "next");
    BOOST_TEST(!d.mid_frame());
  }
}
