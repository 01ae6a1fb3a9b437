// known_hosts: plain, wildcard, negated, [host]:port and hashed entries (made by `ssh-keygen -H`),
// changed and revoked keys, fingerprints as `ssh-keygen -lf` prints them, appending.
#define BOOST_TEST_MODULE known_hosts
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "helper/ssh/known_hosts.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::ssh;
namespace fs = std::filesystem;

namespace {

using ferry::test::TempDir;

std::string run(const std::string& cmd) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), ::pclose);
  BOOST_REQUIRE(p);
  std::string out;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p.get())) out += buf.data();
  return out;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Makes a key with ssh-keygen and returns its public half as a PublicKey plus the .pub line.
std::pair<PublicKey, std::string> make_key(const fs::path& dir, const std::string& name, const std::string& type) {
  fs::path key = dir / name;
  run("ssh-keygen -q -t " + type + " -N '' -C test -f '" + key.string() + "'");
  std::string pub = slurp(key.string() + ".pub");
  std::istringstream in(pub);
  std::string t, b64;
  in >> t >> b64;
  auto blob = base64_decode(b64);
  BOOST_REQUIRE(blob.has_value());
  return {PublicKey{t, *blob}, t + " " + b64};
}

}  // namespace

BOOST_AUTO_TEST_CASE(base64_round_trip) {
  for (std::size_t n = 0; n < 10; ++n) {
    std::vector<std::uint8_t> bytes;
    for (std::size_t i = 0; i < n; ++i) bytes.push_back(static_cast<std::uint8_t>(i * 37 + 1));
    auto back = base64_decode(base64_encode(bytes));
    BOOST_REQUIRE(back.has_value());
    BOOST_TEST(*back == bytes);
  }
  BOOST_TEST(!base64_decode("abc").has_value());
  BOOST_TEST(!base64_decode("ab!d").has_value());
}

BOOST_AUTO_TEST_CASE(fingerprint_matches_ssh_keygen) {
  TempDir t("ferry-kh");
  for (std::string type : {"ed25519", "ecdsa"}) {
    auto [key, line] = make_key(t.path(), "k_" + type, type);
    std::string out = run("ssh-keygen -l -E sha256 -f '" + (t.path() / ("k_" + type + ".pub")).string() + "'");
    BOOST_TEST(out.find(sha256_fingerprint(key.blob)) != std::string::npos, out);
    BOOST_TEST(key_type_of_blob(key.blob) == key.type);
  }
}

BOOST_AUTO_TEST_CASE(plain_wildcard_and_port_entries) {
  TempDir t("ferry-kh");
  auto [a, a_line] = make_key(t.path(), "a", "ed25519");
  auto [b, b_line] = make_key(t.path(), "b", "ed25519");
  fs::path kh = t.path() / "known_hosts";
  std::ofstream(kh) << "# comment\n"
                    << "gpu.example,10.0.0.5 " << a_line << "\n"
                    << "[gpu.example]:2222 " << b_line << "\n"
                    << "*.lab,!evil.lab " << a_line << "\n"
                    << "garbage line\n"
                    << "broken ssh-ed25519 !!!notbase64\n";
  BOOST_TEST(read_known_hosts(kh).size() == 3u);
  BOOST_TEST(known_hosts_name("h", 22) == "h");
  BOOST_TEST(known_hosts_name("h", 2222) == "[h]:2222");

  BOOST_TEST((check_host_key({kh}, "gpu.example", 22, a).status == HostKeyStatus::kMatch));
  BOOST_TEST((check_host_key({kh}, "10.0.0.5", 22, a).status == HostKeyStatus::kMatch));
  BOOST_TEST((check_host_key({kh}, "gpu.example", 2222, b).status == HostKeyStatus::kMatch));
  // The port-22 entry does not vouch for port 2222 and vice versa.
  auto changed = check_host_key({kh}, "gpu.example", 2222, a);
  BOOST_TEST((changed.status == HostKeyStatus::kChanged));
  BOOST_REQUIRE(changed.known.size() == 1u);
  BOOST_TEST(changed.known[0].line == 3);
  BOOST_TEST((check_host_key({kh}, "gpu.example", 22, b).status == HostKeyStatus::kChanged));
  BOOST_TEST((check_host_key({kh}, "box.lab", 22, a).status == HostKeyStatus::kMatch));
  BOOST_TEST((check_host_key({kh}, "evil.lab", 22, a).status == HostKeyStatus::kUnknown));
  BOOST_TEST((check_host_key({kh}, "nowhere", 22, a).status == HostKeyStatus::kUnknown));
  BOOST_TEST((check_host_key({t.path() / "missing"}, "gpu.example", 22, a).status == HostKeyStatus::kUnknown));
  BOOST_TEST(known_key_types({kh}, "gpu.example", 22) == std::vector<std::string>{"ssh-ed25519"});
}

BOOST_AUTO_TEST_CASE(hashed_entries_from_ssh_keygen_dash_h) {
  TempDir t("ferry-kh");
  auto [a, a_line] = make_key(t.path(), "a", "ed25519");
  auto [c, c_line] = make_key(t.path(), "c", "ecdsa");
  fs::path kh = t.path() / "known_hosts";
  std::ofstream(kh) << "gpu.example " << a_line << "\n" << "[127.0.0.1]:2200 " << c_line << "\n";
  run("ssh-keygen -q -H -f '" + kh.string() + "' 2>&1");
  std::string hashed = slurp(kh);
  BOOST_REQUIRE_MESSAGE(hashed.find("|1|") != std::string::npos, hashed);
  BOOST_TEST(hashed.find("gpu.example") == std::string::npos);
  BOOST_TEST((check_host_key({kh}, "gpu.example", 22, a).status == HostKeyStatus::kMatch));
  BOOST_TEST((check_host_key({kh}, "127.0.0.1", 2200, c).status == HostKeyStatus::kMatch));
  BOOST_TEST((check_host_key({kh}, "127.0.0.1", 22, c).status == HostKeyStatus::kUnknown));
  BOOST_TEST((check_host_key({kh}, "gpu.example", 22, c).status == HostKeyStatus::kChanged));
  BOOST_TEST((check_host_key({kh}, "gpu.examplf", 22, a).status == HostKeyStatus::kUnknown));
}

BOOST_AUTO_TEST_CASE(revoked_keys_and_cert_authorities) {
  TempDir t("ferry-kh");
  auto [a, a_line] = make_key(t.path(), "a", "ed25519");
  auto [b, b_line] = make_key(t.path(), "b", "ed25519");
  fs::path kh = t.path() / "known_hosts";
  std::ofstream(kh) << "gpu " << a_line << "\n@revoked * " << a_line << "\n@cert-authority gpu " << b_line << "\n";
  BOOST_TEST((check_host_key({kh}, "gpu", 22, a).status == HostKeyStatus::kRevoked));
  // A CA line is not a host key: b is not accepted as the host's key.
  BOOST_TEST((check_host_key({kh}, "other", 22, b).status == HostKeyStatus::kUnknown));
}

BOOST_AUTO_TEST_CASE(append_then_match_and_ssh_keygen_finds_it) {
  TempDir t("ferry-kh");
  auto [a, a_line] = make_key(t.path(), "a", "ed25519");
  fs::path kh = t.path() / "sub" / "known_hosts";
  BOOST_REQUIRE(append_known_host(kh, "127.0.0.1", 2200, a).has_value());
  BOOST_TEST(((fs::status(kh).permissions() & fs::perms::group_read) == fs::perms::none));
  // A file without a final newline still gets the entry on its own line.
  { std::ofstream(kh, std::ios::app) << "# trailing"; }
  BOOST_REQUIRE(append_known_host(kh, "gpu", 22, a).has_value());
  BOOST_TEST((check_host_key({kh}, "127.0.0.1", 2200, a).status == HostKeyStatus::kMatch));
  BOOST_TEST((check_host_key({kh}, "gpu", 22, a).status == HostKeyStatus::kMatch));
  std::string found = run("ssh-keygen -F '[127.0.0.1]:2200' -f '" + kh.string() + "'");
  BOOST_TEST(found.find("ssh-ed25519") != std::string::npos, found);
}
