// server::sync_result/to_json: a sync engine's summary as sync/push's wire JSON.
#define BOOST_TEST_MODULE sync_result
#include <boost/test/unit_test.hpp>

#include "helper/server/sync_result.hpp"

using namespace ferry;
using nlohmann::json;

BOOST_AUTO_TEST_CASE(a_summary_carries_every_documented_key) {
  sync::SyncSummary s;
  s.files_sent = 3;
  s.files_deleted = 1;
  s.bytes_literal = 100;
  s.local_scan = "paths";
  json j = server::to_json(s);
  for (const char* k : {"filesSent", "filesDeleted", "conflicts", "bytesLiteral", "bytesMatched", "bytesOnWire", "seconds",
                        "dirsMade", "metadataOnly", "unchanged", "dryRun", "cancelled", "conflictList", "heldDeletes",
                        "errors", "unstable", "localScan", "fullWalkReason", "noSpace"})
    BOOST_TEST(j.contains(k), k);
  BOOST_TEST(j.size() == 19u);
  BOOST_TEST(j["filesSent"] == 3);
  BOOST_TEST(j["filesDeleted"] == 1);
  BOOST_TEST(j["localScan"] == "paths");
  BOOST_TEST(j["noSpace"].is_null());
  BOOST_TEST(j["conflicts"] == 0);
}

BOOST_AUTO_TEST_CASE(conflicts_are_a_count_and_a_list_with_the_kind_by_name) {
  sync::SyncSummary s;
  s.conflicts.push_back({"a.py", sync::ConflictKind::changed_remotely, "changed on the box"});
  s.conflicts.push_back({"d", sync::ConflictKind::kind_mismatch, "a directory there"});
  json j = server::to_json(s);
  BOOST_TEST(j["conflicts"] == 2);
  BOOST_REQUIRE(j["conflictList"].size() == 2u);
  BOOST_TEST(j["conflictList"][0] == (json{{"path", "a.py"}, {"kind", "changed_remotely"}, {"message", "changed on the box"}}));
  BOOST_TEST(j["conflictList"][1]["kind"] == "kind_mismatch");
}

BOOST_AUTO_TEST_CASE(a_full_disk_is_reported_with_its_numbers) {
  sync::SyncSummary s;
  s.no_space = sync::SyncSummary::NoSpace{"/data", 10, 1000, 500, 2};
  json j = server::to_json(s);
  BOOST_TEST(j["noSpace"] == (json{{"path", "/data"}, {"availableBytes", 10}, {"totalBytes", 1000}, {"neededBytes", 500},
                                   {"failedPaths", 2}}));
}
