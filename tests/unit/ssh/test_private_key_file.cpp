// Private key inspection: encrypted or not, for OpenSSH-format keys made by ssh-keygen, PEM
// headers, and garbage.
#define BOOST_TEST_MODULE private_key_file
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "helper/ssh/private_key_file.hpp"

using namespace ferry::ssh;
namespace fs = std::filesystem;

BOOST_AUTO_TEST_CASE(openssh_keys_from_ssh_keygen) {
  std::string tmpl = (fs::temp_directory_path() / "ferry-key-XXXXXX").string();
  fs::path dir = ::mkdtemp(tmpl.data());
  for (std::string type : {"ed25519", "ecdsa"}) {
    fs::path plain = dir / (type + "_plain"), locked = dir / (type + "_locked");
    BOOST_REQUIRE(std::system(("ssh-keygen -q -t " + type + " -N '' -f '" + plain.string() + "'").c_str()) == 0);
    BOOST_REQUIRE(std::system(("ssh-keygen -q -t " + type + " -N 'pw' -f '" + locked.string() + "'").c_str()) == 0);
    auto p = inspect_private_key_file(plain);
    BOOST_REQUIRE(p.has_value());
    BOOST_TEST(p->format == "openssh");
    BOOST_TEST(!p->encrypted);
    BOOST_TEST(p->cipher == "none");
    auto l = inspect_private_key_file(locked);
    BOOST_REQUIRE(l.has_value());
    BOOST_TEST(l->encrypted);
    BOOST_TEST(l->cipher == "aes256-ctr");
  }
  BOOST_TEST(!inspect_private_key_file(dir / "missing").has_value());
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(pem_and_garbage) {
  auto pem = inspect_private_key("-----BEGIN EC PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END EC PRIVATE KEY-----\n");
  BOOST_REQUIRE(pem.has_value());
  BOOST_TEST(pem->format == "pem");
  BOOST_TEST(pem->encrypted);
  auto pkcs8 = inspect_private_key("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n");
  BOOST_REQUIRE(pkcs8.has_value());
  BOOST_TEST(pkcs8->encrypted);
  BOOST_TEST(!inspect_private_key("ssh-ed25519 AAAA a public key").has_value());
  BOOST_TEST(!inspect_private_key("-----BEGIN OPENSSH PRIVATE KEY-----\n!!!!\n-----END OPENSSH PRIVATE KEY-----\n").has_value());
  BOOST_TEST(!inspect_private_key("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA").has_value());
  BOOST_TEST(!inspect_private_key("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5v\n-----END OPENSSH PRIVATE KEY-----\n").has_value());
}
