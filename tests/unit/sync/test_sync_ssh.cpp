// One push/pull round trip over a real sshd on loopback (the integration fixture) with the
// agent installed through SshEndpoint: the same engine, the same checks as over the local host.
#define BOOST_TEST_MODULE sync_ssh
#include <boost/test/unit_test.hpp>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "helper/remote/ssh_endpoint.hpp"
#include "helper/sync/scanner.hpp"
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

TreeState scan(const fs::path& root) {
  auto r = scan_tree(root, IgnoreMatcher::for_tree(root, {}), nullptr);
  BOOST_REQUIRE(r.has_value());
  for (auto& [p, m] : r->entries)
    if (m.kind != EntryKind::file) m.mtime_ns = 0;
  return r->entries;
}

}  // namespace

BOOST_AUTO_TEST_CASE(push_and_pull_over_ssh) {
  ferry::test::SshdFixture f;
  f.trust_host_key();
  const fs::path local = f.dir() / "local-project";
  std::string big(600000, '\0');
  std::mt19937 rng(5);
  for (auto& c : big) c = static_cast<char>(rng());
  write_file(local / "train.py", "import torch\n");
  write_file(local / "données/a b.txt", "unicode\n");
  write_file(local / "empty.txt", "");
  write_file(local / "model.bin", big);
  fs::create_directories(local / "empty-dir");
  fs::create_symlink("train.py", local / "main.py");
  fs::permissions(local / "train.py", fs::perms::owner_exec, fs::perm_options::add);

  ferry::remote::SshEndpointOptions o = ferry::test::endpoint_options_for(f);
  o.reconnect = false;
  ferry::remote::SshEndpoint ep(o);
  auto info = ep.connect(20s);
  BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? "" : info.error().message) << "\n" << f.log());
  const fs::path remote = f.home() / "project";

  SyncEngine engine(ep, SyncTarget{local, "", "ferry-test", "~/project", {}, {}});
  auto s1 = engine.push({});
  BOOST_REQUIRE_MESSAGE(s1.has_value(), (s1 ? "" : s1.error().message));
  BOOST_TEST(s1->errors.empty());
  BOOST_TEST(s1->files_sent == 5u);
  auto a = scan(local), b = scan(remote);
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  for (const auto& [p, m] : a) BOOST_TEST_CONTEXT(p) { BOOST_TEST((b.count(p) && b.at(p) == m)); }

  auto s2 = engine.push({});
  BOOST_REQUIRE(s2.has_value());
  BOOST_TEST(s2->files_sent == 0u);
  BOOST_TEST(s2->bytes_on_wire == 0u);

  big[1234] ^= 1;
  write_file(local / "model.bin", big);
  auto s3 = engine.push({});
  BOOST_REQUIRE(s3.has_value());
  BOOST_TEST(s3->files_sent == 1u);
  BOOST_TEST(s3->bytes_on_wire < 16u * 1024);
  BOOST_TEST(read_file(remote / "model.bin") == big);

  write_file(remote / "outputs/metrics.csv", "step,loss\n1,0.5\n");
  auto p = engine.pull({"outputs"}, {});
  BOOST_REQUIRE_MESSAGE(p.has_value(), (p ? "" : p.error().message));
  BOOST_TEST(p->files_sent == 1u);
  BOOST_TEST(read_file(local / "outputs/metrics.csv") == "step,loss\n1,0.5\n");
  ep.close();
}
