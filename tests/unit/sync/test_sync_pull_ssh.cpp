// Pull with deltas over a real sshd on loopback (the integration fixture), agent installed by
// SshEndpoint: a 1-byte change in a 32 MiB remote checkpoint comes back as a two-level delta,
// and a new remote file comes whole in chunks, both byte-identical.
#define BOOST_TEST_MODULE sync_pull_ssh
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <random>

#include "helper/remote/ssh_endpoint.hpp"
#include "helper/sync/sync_engine.hpp"
#include "tests/integration/endpoint_options.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::sync;
using namespace std::chrono_literals;
namespace fs = std::filesystem;
using ferry::test::write_file;
using ferry::test::read_file;

namespace {

std::string random_text(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  std::mt19937_64 rng(seed);
  for (std::size_t i = 0; i + 8 <= n; i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(s.data() + i, &v, 8);
  }
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_one_byte_remote_change_comes_back_as_a_delta_over_ssh) {
  ferry::test::SshdFixture f;
  f.trust_host_key();
  const fs::path local = f.dir() / "local-project";
  fs::create_directories(local);
  ferry::remote::SshEndpointOptions o = ferry::test::endpoint_options_for(f);
  o.reconnect = false;
  ferry::remote::SshEndpoint ep(o);
  auto info = ep.connect(20s);
  BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? "" : info.error().message) << "\n" << f.log());
  const fs::path remote = f.home() / "project";

  // A checkpoint and a log the remote run wrote; the first pull brings both whole.
  std::string ckpt = random_text(32u << 20, 7);
  write_file(remote / "outputs/ckpt.pt", ckpt);
  write_file(remote / "outputs/log.txt", "epoch 1\n");
  SyncEngine engine(ep, SyncTarget{local, "", "ferry-test", "~/project", {}, {}});
  auto first = engine.pull({"outputs"}, {});
  BOOST_REQUIRE_MESSAGE(first.has_value(), (first ? "" : first.error().message));
  BOOST_TEST(first->errors.empty());
  BOOST_TEST(first->files_sent == 2u);
  BOOST_TEST((read_file(local / "outputs/ckpt.pt") == ckpt));

  // The run rewrites one byte of the checkpoint.
  ckpt[20'000'000] ^= 0x21;
  write_file(remote / "outputs/ckpt.pt", ckpt);
  auto second = engine.pull({"outputs"}, {});
  BOOST_REQUIRE_MESSAGE(second.has_value(), (second ? "" : second.error().message));
  BOOST_TEST(second->errors.empty());
  BOOST_TEST(second->files_sent == 1u);
  BOOST_TEST_MESSAGE("1-byte change in 32 MiB over ssh: " << second->bytes_on_wire << " bytes on the wire");
  BOOST_TEST(second->bytes_on_wire < 64u * 1024);
  BOOST_TEST(second->bytes_matched > ckpt.size() - 8u * 1024);
  BOOST_TEST((read_file(local / "outputs/ckpt.pt") == ckpt));
  ep.close();
}
