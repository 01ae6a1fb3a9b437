// helper/server/serve_claims.hpp: of two `ferry serve` on one project (a template imported twice
// into LSP4IJ), the first serves and the second defers (no link, no sync on save, no lenses)
// until the first ends, then takes over; through ServeClaims alone, and through two real servers
// (tests/support/serve_client.hpp) on a local-host project and a burst of saves.
#define BOOST_TEST_MODULE serve_claims
#include <boost/test/unit_test.hpp>

#include <condition_variable>
#include <mutex>
#include <optional>

#include "helper/server/serve_claims.hpp"
#include "protocol/file_uri.hpp"
#include "tests/support/serve_client.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ferry::server::ServeClaims;
using ferry::test::ServeClient;

BOOST_AUTO_TEST_CASE(the_first_claim_serves_the_second_defers_then_takes_over) {
  ferry::test::TempDir root("ferry-claims");
  BOOST_TEST(!ServeClaims().held_elsewhere(root.path()).has_value());
  BOOST_TEST(!fs::exists(root / ".ferry"));  // a probe writes nothing into the project

  std::mutex mu;
  std::condition_variable cv;
  std::optional<fs::path> taken;
  ServeClaims second([&](const fs::path& r) {
    std::lock_guard lock(mu);
    taken = r;
    cv.notify_all();
  });
  {
    ServeClaims first;
    BOOST_TEST(!first.claim(root.path()).has_value());
    BOOST_TEST(!first.claim(root.path()).has_value());  // again: still its own
    auto holder = second.claim(root.path());
    BOOST_REQUIRE(holder.has_value());
    BOOST_TEST(holder->find("(pid ") != std::string::npos, *holder);
    BOOST_TEST((second.held_elsewhere(root.path()) == holder));
  }  // the first server ends
  std::unique_lock lock(mu);
  BOOST_REQUIRE(ferry::test::wait_on(cv, lock, [&] { return taken.has_value(); }, 10s));
  BOOST_TEST(*taken == root.path());
  BOOST_TEST(!second.claim(root.path()).has_value());
  BOOST_TEST(ServeClaims().held_elsewhere(root.path()).has_value());  // the second holds it now
}

namespace {

struct Env {
  ferry::test::TempDir cache{"ferry-claims-cache"};
  Env() {
    ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
    ::setenv("XDG_CACHE_HOME", cache.path().c_str(), 1);
  }
};

json lens_request(const fs::path& file) {
  return {{"textDocument", {{"uri", ferry::protocol::path_to_file_uri(file.string())}}}};
}

}  // namespace

BOOST_AUTO_TEST_CASE(two_servers_on_one_project_sync_a_burst_of_saves_once) {
  Env env;
  ferry::test::TempDir dir("ferry-claims-proj");
  ferry::test::write_file(dir / "ferry.json", json{{"name", "twice"}, {"host", "local"},
                                                   {"mappings", {{{"local", "."}, {"remote", "~/twice"}}}}}.dump());
  ferry::test::write_file(dir / "main.py", "print('hi')\nif __name__ == '__main__':\n    pass\n");
  const fs::path box = env.cache.path() / "ferry" / "local" / "twice" / "twice";
  const json plain = {{"workspace", {{"codeLens", {{"refreshSupport", true}}}}}};
  std::optional<ServeClient> first(std::in_place, dir.path(), plain);
  ServeClient second(dir.path(), plain);
  // Both are asked for the lenses at once, as LSP4IJ asks both its servers: the first keeps it.
  BOOST_TEST(!first->call("textDocument/codeLens", lens_request(dir / "main.py"))["result"].empty());
  BOOST_TEST(second.call("textDocument/codeLens", lens_request(dir / "main.py"))["result"].empty());
  auto refused = second.call("host/connect", json::object());
  BOOST_TEST(refused["error"]["code"] == -32092, refused.dump());
  BOOST_TEST(refused["error"]["data"]["holder"].get<std::string>().find("(pid ") != std::string::npos, refused.dump());

  // A burst of saves reaches both: the first syncs them, the second nothing at all.
  for (int i = 0; i < 20; ++i) {
    const fs::path f = dir / ("f" + std::to_string(i) + ".py");
    ferry::test::write_file(f, "x = " + std::to_string(i) + "\n");
    const json saved{{"textDocument", {{"uri", ferry::protocol::path_to_file_uri(f.string())}}}};
    first->notify("textDocument/didSave", saved);
    second.notify("textDocument/didSave", saved);
  }
  BOOST_TEST(first->call("sync/flush", json::object()).contains("result"));
  for (int i = 0; i < 20; ++i) BOOST_TEST(fs::exists(box / ("f" + std::to_string(i) + ".py")), i);
  // Its saver has run (a flush waits for it): nothing synced, nothing failed, nothing pending.
  const json quiet = second.call("sync/status", json::object())["result"];
  BOOST_TEST(quiet["lastSync"].is_null(), quiet.dump());
  BOOST_TEST(!quiet.contains("lastError"), quiet.dump());
  BOOST_TEST(quiet["pendingSaves"].empty(), quiet.dump());

  // The first ends: the second takes over, says so, asks for lenses again, and syncs saves.
  first.reset();
  auto said = second.wait_notification(
      [](const json& n) {
        return n["method"] == "window/logMessage" && n["params"]["message"].get<std::string>().find("serves it now") != std::string::npos;
      },
      10s, [](const json&) { return json{{"result", nullptr}}; });
  BOOST_REQUIRE(said.has_value());
  BOOST_TEST(second.wait_request("workspace/codeLens/refresh", 10s, [](const json&) { return json{{"result", nullptr}}; }).has_value());
  BOOST_TEST(!second.call("textDocument/codeLens", lens_request(dir / "main.py"))["result"].empty());
  ferry::test::write_file(dir / "after.py", "y = 1\n");
  second.notify("textDocument/didSave", {{"textDocument", {{"uri", ferry::protocol::path_to_file_uri((dir / "after.py").string())}}}});
  BOOST_TEST(second.call("sync/flush", json::object()).contains("result"));
  BOOST_TEST(fs::exists(box / "after.py"));
}
