// protocol/base64: RFC 4648 test vectors, round trips of every length remainder, and what is refused.
#define BOOST_TEST_MODULE base64
#include <boost/test/unit_test.hpp>

#include "protocol/base64.hpp"

using ferry::protocol::base64_decode;
using ferry::protocol::base64_encode;

namespace {
std::vector<std::uint8_t> bytes_of(std::string_view s) { return {s.begin(), s.end()}; }
}  // namespace

BOOST_AUTO_TEST_CASE(rfc4648_vectors) {
  const std::pair<std::string_view, std::string_view> vectors[] = {
      {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (const auto& [plain, encoded] : vectors) {
    BOOST_TEST(base64_encode(bytes_of(plain)) == encoded);
    auto back = base64_decode(encoded);
    BOOST_REQUIRE(back.has_value());
    BOOST_TEST(*back == bytes_of(plain));
  }
}

BOOST_AUTO_TEST_CASE(unpadded_as_openssh_fingerprints_print) {
  BOOST_TEST(base64_encode(bytes_of("f"), false) == "Zg");
  BOOST_TEST(base64_encode(bytes_of("fo"), false) == "Zm8");
}

BOOST_AUTO_TEST_CASE(every_byte_value_round_trips) {
  std::vector<std::uint8_t> all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<std::uint8_t>(i));
  for (std::size_t n = 254; n <= 256; ++n) {
    std::vector<std::uint8_t> part(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n));
    auto back = base64_decode(base64_encode(part));
    BOOST_REQUIRE(back.has_value());
    BOOST_TEST(*back == part);
  }
  BOOST_TEST(base64_encode({0xfb, 0xff}) == "+/8=");
}

BOOST_AUTO_TEST_CASE(bad_input_is_refused_with_a_reason) {
  BOOST_TEST(base64_decode("abc").error() == "base64 length is not a multiple of 4");
  for (std::string_view bad : {"ab!d", "ab=c", "====", "a===", "Zg==Zg==", "Zm9\n"})
    BOOST_TEST(!base64_decode(bad).has_value(), bad);
}
