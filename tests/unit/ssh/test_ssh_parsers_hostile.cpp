// Hostile input for the parsers of outside bytes (ssh config, known_hosts, destinations, key
// headers): deterministic random and mutated inputs must yield values or errors, never crashes or
// hangs. (A libFuzzer target would go further; this runs in every ctest.)
#define BOOST_TEST_MODULE ssh_parsers_hostile
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "helper/ssh/known_hosts.hpp"
#include "helper/ssh/private_key_file.hpp"
#include "helper/ssh/ssh_config.hpp"

using namespace ferry::ssh;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kPieces{
    "Host ", "HostName ", "User ", "Port ", "IdentityFile ", "ProxyJump ", "Include ", "Match ", "all ", "host ",
    "!", "*", "?", ",", "=", "\"", "#", "%h", "%r", "%", "~", "~/", "\n", "\t", " ", "a", "b.c", "[::1]:22",
    "u@h:2", "65536", "0", "-1", "1m", "yes", "accept-new", "none", "StrictHostKeyChecking ", "ConnectTimeout ",
    "|1|", "ssh-ed25519 ", "AAAAC3NzaC1lZDI1NTE5AAAAI", "@revoked ", "@cert-authority ", "\r", "\xff", std::string(1, '\0')};

std::string random_text(std::mt19937& rng, int pieces) {
  std::uniform_int_distribution<std::size_t> pick(0, kPieces.size() - 1);
  std::string out;
  for (int i = 0; i < pieces; ++i) out += kPieces[pick(rng)];
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(random_configs_and_known_hosts_never_crash) {
  std::string tmpl = (fs::temp_directory_path() / "ferry-hostile-XXXXXX").string();
  fs::path dir = ::mkdtemp(tmpl.data());
  std::mt19937 rng(12345);
  LocalContext local{"alice", dir};
  int ok = 0, errors = 0;
  for (int i = 0; i < 1500; ++i) {
    std::string text = random_text(rng, 1 + static_cast<int>(rng() % 40));
    fs::path cfg = dir / "config";
    std::ofstream(cfg, std::ios::binary) << text;
    // Includes of itself must end at the depth limit, not recurse forever.
    if (i % 50 == 0) std::ofstream(cfg, std::ios::app) << "\nInclude " << cfg.string() << "\n";
    auto dest = parse_destination(random_text(rng, 1 + static_cast<int>(rng() % 4)));
    auto r = resolve_host(dest ? *dest : Destination{std::nullopt, "h", std::nullopt}, cfg, local, true);
    (r ? ok : errors) += 1;
    if (r) {
      BOOST_TEST(r->port >= 1);
      BOOST_TEST(r->port <= 65535);
      BOOST_TEST(!r->hostname.empty());
    }
    std::ofstream(dir / "kh", std::ios::binary) << text;
    auto entries = read_known_hosts(dir / "kh");
    for (const auto& e : entries) BOOST_TEST(key_type_of_blob(e.key.blob) == e.key.type);
    (void)check_host_key({dir / "kh"}, "h", 22, PublicKey{"ssh-ed25519", {1, 2, 3}});
    (void)inspect_private_key(text);
    (void)base64_decode(text);
  }
  BOOST_TEST(ok > 0);  // the corpus exercises both outcomes
  BOOST_TEST(errors > 0);
  fs::remove_all(dir);
}
