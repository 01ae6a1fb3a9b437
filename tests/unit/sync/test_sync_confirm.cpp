// The mass-delete guard through `ferry serve` (real Server on pipes, real ferry-agent on the
// local host): the server asks sync/confirmMassDelete while the push waits; "no", an error answer
// or a malformed one keep the deletes held, "yes" deletes them; confirmMassDelete: true skips the
// question; protect (from ferry.json) keeps remote-only data even under delete: "mirror".
#define BOOST_TEST_MODULE sync_confirm
#include <boost/test/unit_test.hpp>

#include <stdlib.h>

#include <filesystem>

#include "tests/support/serve_client.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::test::ServeClient;
using ferry::test::TempDir;
using ferry::test::write_file;
using json = nlohmann::json;
namespace fs = std::filesystem;

BOOST_AUTO_TEST_CASE(mass_deletes_ask_the_ide_and_protect_is_honoured) {
  TempDir t("ferry-confirm");
  const fs::path project = t / "proj";
  write_file(project / "ferry.json",
             R"({"name":"confirm","host":"local","mappings":[{"local":".","remote":"~/w"}],"protect":["/data/"]})");
  for (int i = 0; i < 10; ++i) write_file(project / ("src/f" + std::to_string(i) + ".py"), "x\n");
  ::setenv("XDG_CACHE_HOME", (t / "cache").c_str(), 1);
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
  const fs::path remote = t / "cache/ferry/local/confirm/w";

  ServeClient c(project);
  BOOST_TEST((std::find(c.methods.begin(), c.methods.end(), "sync/confirmMassDelete") != c.methods.end()));
  json first = c.call("sync/push", json::object());
  BOOST_REQUIRE_MESSAGE(first.contains("result"), first.dump());
  BOOST_TEST(first["result"]["filesSent"] == 11);
  BOOST_TEST(c.server_requests.empty());  // nothing to delete: nothing asked

  for (int i = 0; i < 8; ++i) fs::remove(project / ("src/f" + std::to_string(i) + ".py"));

  // "No": held, nothing deleted, the question named the count and the project.
  json no = c.call("sync/push", json::object(), [](const json&) { return json{{"result", {{"accept", false}}}}; });
  BOOST_REQUIRE_MESSAGE(no.contains("result"), no.dump());
  BOOST_REQUIRE_EQUAL(c.server_requests.size(), 1u);
  const json& ask = c.server_requests[0];
  BOOST_TEST(ask["method"] == "sync/confirmMassDelete");
  BOOST_TEST(ask["id"].get<std::string>().starts_with("srv-"));
  BOOST_TEST(ask["params"]["count"] == 8);
  BOOST_TEST(ask["params"]["reason"].get<std::string>().find("8 of") != std::string::npos);
  BOOST_TEST(ask["params"]["root"] == fs::weakly_canonical(project).string());
  BOOST_TEST(no["result"]["heldDeletes"].size() == 8u);
  BOOST_TEST(no["result"]["filesDeleted"] == 0);
  BOOST_TEST(fs::exists(remote / "src/f0.py"));

  // An error answer and a malformed one: held too.
  json err = c.call("sync/push", json::object(),
                    [](const json&) { return json{{"error", {{"code", -32603}, {"message", "no UI"}}}}; });
  BOOST_TEST(err["result"]["heldDeletes"].size() == 8u);
  json odd = c.call("sync/push", json::object(), [](const json&) { return json{{"result", {{"accept", "yes"}}}}; });
  BOOST_TEST(odd["result"]["heldDeletes"].size() == 8u);
  BOOST_TEST(fs::exists(remote / "src/f0.py"));
  BOOST_TEST(c.server_requests.size() == 3u);

  // "Yes": deleted in this push.
  json yes = c.call("sync/push", json::object(), [](const json&) { return json{{"result", {{"accept", true}}}}; });
  BOOST_REQUIRE_MESSAGE(yes.contains("result"), yes.dump());
  BOOST_TEST(yes["result"]["filesDeleted"] == 8);
  BOOST_TEST(yes["result"]["heldDeletes"].empty());
  BOOST_TEST(!fs::exists(remote / "src/f0.py"));
  BOOST_TEST(fs::exists(remote / "src/f9.py"));

  // Mirror: remote-only files go (confirmed in advance, so not asked), protected ones stay.
  for (int i = 0; i < 6; ++i) write_file(remote / ("stray/s" + std::to_string(i) + ".txt"), "s\n");
  write_file(remote / "data/train.bin", "dataset\n");
  write_file(remote / "data/val/part-0.bin", "dataset\n");
  const auto asked = c.server_requests.size();
  json mirror = c.call("sync/push", {{"delete", "mirror"}, {"confirmMassDelete", true}});
  BOOST_REQUIRE_MESSAGE(mirror.contains("result"), mirror.dump());
  BOOST_TEST(c.server_requests.size() == asked);
  BOOST_TEST(mirror["result"]["filesDeleted"] == 6);
  BOOST_TEST(!fs::exists(remote / "stray/s0.txt"));
  BOOST_TEST(fs::exists(remote / "data/train.bin"));
  BOOST_TEST(fs::exists(remote / "data/val/part-0.bin"));
}

// Sync on save: a few deleted files in a big tree go at once (6 of 206 is no mass delete, although
// the save sees only those 6); a folder of 120 deleted files asks the IDE like a push does.
BOOST_AUTO_TEST_CASE(saves_weigh_deletes_against_the_tree_and_ask_for_many) {
  TempDir t("ferry-confirm-save");
  const fs::path project = t / "proj";
  write_file(project / "ferry.json", R"({"name":"saves","host":"local","mappings":[{"local":".","remote":"~/w"}]})");
  for (int i = 0; i < 80; ++i) write_file(project / ("src/f" + std::to_string(i) + ".py"), "x\n");
  for (int i = 0; i < 125; ++i) write_file(project / ("old/g" + std::to_string(i) + ".py"), "y\n");
  ::setenv("XDG_CACHE_HOME", (t / "cache").c_str(), 1);
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
  const fs::path remote = t / "cache/ferry/local/saves/w";

  ServeClient c(project);
  json first = c.call("sync/push", json::object());
  BOOST_REQUIRE_MESSAGE(first.contains("result"), first.dump());
  BOOST_TEST(first["result"]["filesSent"] == 206);

  auto refuse = [](const json&) { return json{{"result", {{"accept", false}}}}; };
  for (int i = 0; i < 6; ++i) {
    const std::string rel = "src/f" + std::to_string(i) + ".py";
    fs::remove(project / rel);
    c.notify("sync/fileSaved", {{"path", (project / rel).string()}});
  }
  // flush waits for the save, then pushes the whole tree: if the save held its deletes, the
  // flush's own push would be the one deleting them.
  json flushed = c.call("sync/flush", json::object(), refuse);
  BOOST_REQUIRE_MESSAGE(flushed.contains("result"), flushed.dump());
  BOOST_TEST(c.server_requests.empty());
  BOOST_TEST(flushed["result"]["filesDeleted"] == 0);
  BOOST_TEST(!fs::exists(remote / "src/f0.py"));
  BOOST_TEST(!fs::exists(remote / "src/f5.py"));

  for (int i = 0; i < 120; ++i) {
    const std::string rel = "old/g" + std::to_string(i) + ".py";
    fs::remove(project / rel);
    c.notify("sync/fileSaved", {{"path", (project / rel).string()}});
  }
  json accepted = c.call("sync/flush", json::object(), [](const json&) { return json{{"result", {{"accept", true}}}}; });
  BOOST_REQUIRE_MESSAGE(accepted.contains("result"), accepted.dump());
  // The saves asked; the flush's push had nothing left to ask about. The burst normally goes as
  // one push (120 in one question); a machine too loaded to deliver it within the server's burst
  // window splits it, and each part is weighed alone (a tail of a few files goes unasked), but
  // the bulk (over 100) still asks.
  BOOST_REQUIRE(!c.server_requests.empty());
  int asked = 0;
  for (const auto& q : c.server_requests) {
    BOOST_TEST(q["method"] == "sync/confirmMassDelete");
    asked += q["params"]["count"].get<int>();
  }
  BOOST_TEST(asked > 100);
  BOOST_TEST(asked <= 120);
  BOOST_TEST(accepted["result"]["filesDeleted"] == 0);
  BOOST_TEST(!fs::exists(remote / "old/g0.py"));
  BOOST_TEST(fs::exists(remote / "old/g120.py"));
  BOOST_TEST(fs::exists(remote / "src/f6.py"));
}
