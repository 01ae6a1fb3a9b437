// A push onto a box whose disk fills up (issue #17): the agent runs on a real 1 MiB tmpfs of its
// own (tests/support/tmpfs_agent.hpp), so ENOSPC comes from the kernel, not from a stand-in. The
// files that do not fit keep their old version, and the summary says how much room the box has
// at the mapping root, how much the push writes, and what to do, instead of only "No space left
// on device" per file. Where no private tmpfs can be had it fails, with the reason (never skipped:
// a skipped test would count as passed).
#define BOOST_TEST_MODULE sync_no_space
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <random>

#include "helper/remote/local_endpoint.hpp"
#include "helper/sync/sync_engine.hpp"
#include "protocol/delta/delta_types.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tmpfs_agent.hpp"
#include "tests/support/random_bytes.hpp"

using namespace ferry::sync;
namespace fs = std::filesystem;
using ferry::remote::LocalEndpoint;
using ferry::remote::LocalEndpointOptions;
using ferry::test::TempDir;
using ferry::test::write_file;
using json = nlohmann::json;

namespace {

using ferry::test::random_bytes;

boost::test_tools::assertion_result tmpfs_available() {
  auto why = ferry::test::tmpfs_agent_unavailable();
  boost::test_tools::assertion_result r(!why);
  if (why) r.message() << *why;
  return r;
}

// The remote file's xxh3-128 as the agent reports it.
std::optional<std::vector<std::uint8_t>> remote_hash(LocalEndpoint& ep, const std::string& path) {
  auto r = ep.call("sync/list", json{{"base", "proj"}, {"known", json::array()}, {"only", json::array({path})}});
  if (!r || r->at("entries").empty() || !r->at("entries")[0].at(6).is_binary()) return std::nullopt;
  return r->at("entries")[0].at(6).get_binary();
}

}  // namespace

// Not skipped where no tmpfs can be had: a skipped test would count as passed.
BOOST_AUTO_TEST_CASE(a_full_disk_keeps_the_old_files_and_the_error_says_how_much_room_is_missing) {
  BOOST_REQUIRE_MESSAGE(tmpfs_available(), "a private 1 MiB tmpfs is needed (unshare --user --map-root-user --mount)");
  TempDir t;
  const fs::path local = t.path() / "local";
  const auto old_model = random_bytes(100 << 10, 1);
  write_file(local / "model.pt", old_model);
  write_file(local / "train.py", "print('v1')\n");
  LocalEndpointOptions o;
  o.agent = ferry::test::write_tmpfs_agent(t.path(), FERRY_AGENT_PATH, "1m");  // the box's whole disk
  o.root = t.path() / "box";
  LocalEndpoint ep(o);
  BOOST_REQUIRE_MESSAGE(ep.connect().has_value(), "agent on a tmpfs did not start");
  SyncEngine engine(ep, SyncTarget{local, "proj", "local", "~/proj", {}, {}});

  auto first = engine.push({});
  BOOST_REQUIRE_MESSAGE(first.has_value(), (first ? "" : first.error().message));
  BOOST_REQUIRE(first->errors.empty());
  BOOST_REQUIRE(first->files_sent == 2u);

  // A checkpoint that grew past the disk, and a small edit beside it.
  const auto new_model = random_bytes(2 << 20, 2);
  write_file(local / "model.pt", new_model);
  write_file(local / "train.py", "print('v2')\n");
  auto full = engine.push({});
  BOOST_REQUIRE_MESSAGE(full.has_value(), (full ? "" : full.error().message));
  BOOST_REQUIRE(full->no_space.has_value());
  const auto& ns = *full->no_space;
  BOOST_TEST(ns.total_bytes == 1u << 20);                       // the tmpfs's size, from statvfs
  BOOST_TEST(ns.available_bytes < 1u << 20);
  BOOST_TEST(ns.needed_bytes == new_model.size() + 12);         // model.pt and train.py, whole
  BOOST_TEST(ns.failed_paths == 1u);
  BOOST_TEST(ns.path == (t.path() / "box/proj").string());
  BOOST_REQUIRE(!full->errors.empty());
  const std::string& advice = full->errors.front();
  for (const auto& e : full->errors) BOOST_TEST_MESSAGE("error: " << e);
  BOOST_TEST(full->errors.back().find("model.pt': sync/applyDelta") == std::string::npos, "said twice: " << full->errors.back());
  BOOST_TEST(advice.starts_with("no space left on local sandbox"), advice);
  BOOST_TEST(advice.find("free of 1.0 MiB") != std::string::npos, advice);
  BOOST_TEST(advice.find("this push writes 2.0 MiB") != std::string::npos, advice);
  BOOST_TEST(advice.find("keep their old version") != std::string::npos, advice);
  BOOST_TEST(advice.find("bigger disk in ferry.json") != std::string::npos, advice);
  // The per-file error is still there, after the advice.
  BOOST_TEST(std::any_of(full->errors.begin() + 1, full->errors.end(),
                         [](const std::string& e) { return e.find("model.pt") != std::string::npos &&
                                                           e.find("No space left on device") != std::string::npos; }));
  BOOST_REQUIRE(full->no_space.has_value());
  BOOST_TEST(full->no_space->needed_bytes == new_model.size() + 12);

  // Old version intact on the box; the small edit that fit went through.
  const auto old_hash = ferry::delta::hash128(ferry::delta::Bytes(old_model.data(), old_model.size()));
  auto on_box = remote_hash(ep, "model.pt");
  BOOST_REQUIRE(on_box.has_value());
  BOOST_TEST((*on_box == std::vector<std::uint8_t>(old_hash.begin(), old_hash.end())));
  // The failed temp copy is gone: once the checkpoint is small again, it fits.
  write_file(local / "model.pt", random_bytes(600 << 10, 3));
  auto again = engine.push({});
  BOOST_REQUIRE_MESSAGE(again.has_value(), (again ? "" : again.error().message));
  BOOST_TEST(again->errors.empty());
  BOOST_TEST(!again->no_space.has_value());
}
