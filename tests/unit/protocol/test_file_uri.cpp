// file:// URIs from LSP clients: VS Code's and Neovim's encodings decode to the same path; any
// byte string round-trips; other schemes, hosts, bad escapes and NUL bytes are refused. Windows
// style (drive letters, UNC, VS Code's "c%3A") on every platform.
#define BOOST_TEST_MODULE file_uri
#include <boost/test/unit_test.hpp>

#include <random>

#include "protocol/file_uri.hpp"

using ferry::protocol::file_uri_to_path;
using ferry::protocol::path_to_file_uri;
using ferry::protocol::PathStyle;
// The POSIX style named: these run under Wine too, where the native style is Windows'.
constexpr auto kPosix = PathStyle::posix;

BOOST_AUTO_TEST_CASE(clients_encodings_decode_to_the_path) {
  BOOST_TEST(file_uri_to_path("file:///home/u/a%20b.py", kPosix).value() == "/home/u/a b.py");
  BOOST_TEST(file_uri_to_path("file:///home/u/a b.py", kPosix).value() == "/home/u/a b.py");  // Neovim leaves some as they are
  BOOST_TEST(file_uri_to_path("file://localhost/tmp/x", kPosix).value() == "/tmp/x");
  BOOST_TEST(file_uri_to_path("FILE:///tmp/%C3%A9t%c3%a9.py", kPosix).value() == "/tmp/\xc3\xa9t\xc3\xa9.py");
  BOOST_TEST(file_uri_to_path("file:///tmp/a%23b%3Fc", kPosix).value() == "/tmp/a#b?c");
  BOOST_TEST(file_uri_to_path("file:///tmp/x.py#L3", kPosix).value() == "/tmp/x.py");
}

BOOST_AUTO_TEST_CASE(what_is_not_a_local_file_is_refused) {
  for (const char* bad : {"http://x/y", "file:relative", "file://", "file://other/tmp/x", "file:///a%2", "file:///a%zz",
                          "file:///a%00b", "untitled:Untitled-1", ""})
    BOOST_TEST(!file_uri_to_path(bad, kPosix).has_value(), bad);
}

BOOST_AUTO_TEST_CASE(any_byte_string_round_trips) {
  BOOST_TEST(path_to_file_uri("/a b/#?%", kPosix) == "file:///a%20b/%23%3F%25");
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string path = "/";
    const int n = static_cast<int>(rng() % 24);
    for (int k = 0; k < n; ++k) {
      char c = static_cast<char>(rng() % 256);
      path.push_back(c == '\0' ? 'z' : c);
    }
    auto back = file_uri_to_path(path_to_file_uri(path, kPosix), kPosix);
    BOOST_REQUIRE(back.has_value());
    BOOST_TEST(*back == path);
  }
}

// Windows paths, tested on every platform through the explicit style.
constexpr auto kWin = PathStyle::windows;

BOOST_AUTO_TEST_CASE(windows_clients_uris_decode_to_drive_and_unc_paths) {
  // VS Code (drive letter lower-case, ':' escaped), LSP4IJ / IntelliJ (as the path is), others.
  BOOST_TEST(file_uri_to_path("file:///c%3A/Users/me/proj/a.py", kWin).value() == "C:\\Users\\me\\proj\\a.py");
  BOOST_TEST(file_uri_to_path("file:///C:/Users/me/proj/a.py", kWin).value() == "C:\\Users\\me\\proj\\a.py");
  BOOST_TEST(file_uri_to_path("file:///d%3a/x%20y/%C3%A9.py", kWin).value() == "D:\\x y\\\xc3\xa9.py");
  BOOST_TEST(file_uri_to_path("file://localhost/c:/x", kWin).value() == "C:\\x");
  BOOST_TEST(file_uri_to_path("file://LOCALHOST/c:/x", kWin).value() == "C:\\x");
  BOOST_TEST(file_uri_to_path("file:///C|/old/form", kWin).value() == "C:\\old\\form");
  BOOST_TEST(file_uri_to_path("file:///c%3A", kWin).value() == "C:\\");
  BOOST_TEST(file_uri_to_path("file:///c%3A/", kWin).value() == "C:\\");
  BOOST_TEST(file_uri_to_path("file:///c:/a.py#L3", kWin).value() == "C:\\a.py");
  // UNC: the server as the authority, or (older clients) after four slashes.
  BOOST_TEST(file_uri_to_path("file://server/share/dir/a.py", kWin).value() == "\\\\server\\share\\dir\\a.py");
  BOOST_TEST(file_uri_to_path("file:////server/share/dir/a.py", kWin).value() == "\\\\server\\share\\dir\\a.py");
  BOOST_TEST(file_uri_to_path("file://wsl%24/Ubuntu/home", kWin).value() == "\\\\wsl$\\Ubuntu\\home");
  BOOST_TEST(file_uri_to_path("file://localhostx/share/a", kWin).value() == "\\\\localhostx\\share\\a");
}

BOOST_AUTO_TEST_CASE(windows_uris_without_a_drive_or_a_share_are_refused) {
  for (const char* bad : {"file:///home/u/a.py", "file:///c%3Arelative", "file:///cd:/x", "file:///1:/x", "file://server/",
                          "file://server", "file:////server", "file:////server/", "file://ser%5Cver/share/x",
                          "file://a:b/share/x", "file:///c%3A/a%2", "file:///c%3A/a%zz", "file:///c%3A/a%00b",
                          "http://server/share/x", "untitled:Untitled-1", "file:relative", ""})
    BOOST_TEST(!file_uri_to_path(bad, kWin).has_value(), bad);
  // The POSIX style keeps refusing hosts and taking "/c:/x" as a path.
  BOOST_TEST(!file_uri_to_path("file://server/share/x", PathStyle::posix).has_value());
  BOOST_TEST(file_uri_to_path("file:///c%3A/x", PathStyle::posix).value() == "/c:/x");
}

BOOST_AUTO_TEST_CASE(windows_paths_are_written_as_vs_code_writes_them) {
  BOOST_TEST(path_to_file_uri("C:\\Users\\me\\proj\\a.py", kWin) == "file:///c%3A/Users/me/proj/a.py");
  BOOST_TEST(path_to_file_uri("C:/Users/me/proj/a.py", kWin) == "file:///c%3A/Users/me/proj/a.py");
  BOOST_TEST(path_to_file_uri("c:\\a b\\#1.py", kWin) == "file:///c%3A/a%20b/%231.py");
  BOOST_TEST(path_to_file_uri("C:\\", kWin) == "file:///c%3A/");
  BOOST_TEST(path_to_file_uri("C:", kWin) == "file:///c%3A/");
  BOOST_TEST(path_to_file_uri("\\\\Server\\share\\x", kWin) == "file://server/share/x");
  BOOST_TEST(path_to_file_uri("//server/share/x", kWin) == "file://server/share/x");
  BOOST_TEST(path_to_file_uri("\\\\?\\C:\\long\\path", kWin) == "file:///c%3A/long/path");
  BOOST_TEST(path_to_file_uri("\\\\?\\UNC\\server\\share\\x", kWin) == "file://server/share/x");
  BOOST_TEST(path_to_file_uri("\xc3\xa9\\x", kWin) == "file:///%C3%A9/x");  // not absolute: written, refused back
  BOOST_TEST(!file_uri_to_path(path_to_file_uri("\xc3\xa9\\x", kWin), kWin).has_value());
}

BOOST_AUTO_TEST_CASE(windows_names_round_trip) {
  std::mt19937 rng(11);
  for (int i = 0; i < 2000; ++i) {
    // Any bytes but NUL in the names; '/' and '\' both separators (the path comes back with '\').
    std::string path = (i % 3 == 0) ? "\\\\srv\\share\\" : std::string(1, static_cast<char>('A' + rng() % 26)) + ":\\";
    const int n = static_cast<int>(rng() % 24);
    for (int k = 0; k < n; ++k) {
      char c = static_cast<char>(rng() % 256);
      path.push_back(c == '\0' ? 'z' : c);
    }
    std::string expected = path;
    for (char& c : expected)
      if (c == '/') c = '\\';
    const std::string uri = path_to_file_uri(path, kWin);
    auto back = file_uri_to_path(uri, kWin);
    BOOST_REQUIRE_MESSAGE(back.has_value(), uri << ": " << (back ? std::string() : back.error()));
    BOOST_TEST(*back == expected);
  }
}

// std::filesystem::path made from and read as UTF-8 (MinGW reads a narrow string through the C
// locale): a non-ASCII name survives the round trip on Linux and under Wine alike.
BOOST_AUTO_TEST_CASE(filesystem_paths_go_through_utf8) {
  using ferry::protocol::file_uri_to_fs_path;
  using ferry::protocol::fs_path_to_file_uri;
#ifdef _WIN32
  const std::filesystem::path p(u8"C:\\Users\\me\\caf\u00e9\\\u5b66\u7fd2.py");
  const std::string uri = "file:///c%3A/Users/me/caf%C3%A9/%E5%AD%A6%E7%BF%92.py";
  BOOST_TEST(!file_uri_to_fs_path("file:///c%3A/caf%E9").has_value());  // Latin-1, not UTF-8
#else
  const std::filesystem::path p(u8"/home/me/caf\u00e9/\u5b66\u7fd2.py");
  const std::string uri = "file:///home/me/caf%C3%A9/%E5%AD%A6%E7%BF%92.py";
  BOOST_TEST(file_uri_to_fs_path("file:///caf%E9").value().native() == "/caf\xe9");  // any bytes on POSIX
#endif
  BOOST_TEST(fs_path_to_file_uri(p) == uri);
  auto back = file_uri_to_fs_path(uri);
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST((*back == p));
  BOOST_TEST((back->filename().u8string() == u8"\u5b66\u7fd2.py"));
  BOOST_TEST(!file_uri_to_fs_path("http://x/y").has_value());
}

// Callers that name no style get the platform's.
BOOST_AUTO_TEST_CASE(the_default_style_is_the_platforms) {
#ifdef _WIN32
  BOOST_TEST(file_uri_to_path("file:///c%3A/x").value() == "C:\\x");
  BOOST_TEST(path_to_file_uri("C:\\x") == "file:///c%3A/x");
#else
  BOOST_TEST(file_uri_to_path("file:///c%3A/x").value() == "/c:/x");
  BOOST_TEST(path_to_file_uri("/x y") == "file:///x%20y");
#endif
}
