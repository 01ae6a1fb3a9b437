// file:// URIs from LSP clients: VS Code's and Neovim's encodings decode to the same path; any
// byte string round-trips; other schemes, hosts, bad escapes and NUL bytes are refused.
#define BOOST_TEST_MODULE file_uri
#include <boost/test/unit_test.hpp>

#include <random>

#include "protocol/file_uri.hpp"

using ferry::protocol::file_uri_to_path;
using ferry::protocol::path_to_file_uri;

BOOST_AUTO_TEST_CASE(clients_encodings_decode_to_the_path) {
  BOOST_TEST(file_uri_to_path("file:///home/u/a%20b.py").value() == "/home/u/a b.py");
  BOOST_TEST(file_uri_to_path("file:///home/u/a b.py").value() == "/home/u/a b.py");  // Neovim leaves some as they are
  BOOST_TEST(file_uri_to_path("file://localhost/tmp/x").value() == "/tmp/x");
  BOOST_TEST(file_uri_to_path("FILE:///tmp/%C3%A9t%c3%a9.py").value() == "/tmp/\xc3\xa9t\xc3\xa9.py");
  BOOST_TEST(file_uri_to_path("file:///tmp/a%23b%3Fc").value() == "/tmp/a#b?c");
  BOOST_TEST(file_uri_to_path("file:///tmp/x.py#L3").value() == "/tmp/x.py");
}

BOOST_AUTO_TEST_CASE(what_is_not_a_local_file_is_refused) {
  for (const char* bad : {"http://x/y", "file:relative", "file://", "file://other/tmp/x", "file:///a%2", "file:///a%zz",
                          "file:///a%00b", "untitled:Untitled-1", ""})
    BOOST_TEST(!file_uri_to_path(bad).has_value(), bad);
}

BOOST_AUTO_TEST_CASE(any_byte_string_round_trips) {
  BOOST_TEST(path_to_file_uri("/a b/#?%") == "file:///a%20b/%23%3F%25");
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string path = "/";
    const int n = static_cast<int>(rng() % 24);
    for (int k = 0; k < n; ++k) {
      char c = static_cast<char>(rng() % 256);
      path.push_back(c == '\0' ? 'z' : c);
    }
    auto back = file_uri_to_path(path_to_file_uri(path));
    BOOST_REQUIRE(back.has_value());
    BOOST_TEST(*back == path);
  }
}
