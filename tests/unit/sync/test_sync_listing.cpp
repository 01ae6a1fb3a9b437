// The remote listing a push or pull starts with, through the real ferry-agent (LocalEndpoint):
// it comes in pages with progress, a cancelled sync stops it between pages and the agent lets
// go of the walk, and it never walks into another filesystem mounted under the mapping root
// (issue #17: a mapping to "/" walked /proc, /sys and every mount for minutes, in silence); a
// pull's listing leaves files over hashAtMost unhashed, and an `only` listing hashes one.
#define BOOST_TEST_MODULE sync_listing
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "helper/remote/local_endpoint.hpp"
#include "helper/sync/sync_engine.hpp"
#include "protocol/delta/delta_types.hpp"
#include "remote-runtime/agent/sync/tree_listing.hpp"
#include "tests/support/random_bytes.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/tmpfs_agent.hpp"

using namespace ferry::sync;
namespace fs = std::filesystem;
namespace agent = ferry::agent::sync;
using ferry::remote::LocalEndpoint;
using ferry::remote::LocalEndpointOptions;
using ferry::test::TempDir;
using ferry::test::write_file;
using json = nlohmann::json;

namespace {

constexpr int kDirs = 40, kFilesPerDir = 50;
constexpr std::uint64_t kRemoteEntries = kDirs + kDirs * kFilesPerDir;  // what the agent lists

// A project with one file, and a remote mapping that already holds 2040 entries ferry did not
// put there (a populated box directory): the first push must list them all.
struct Fixture {
  TempDir t;
  fs::path local = t.path() / "local";
  fs::path sandbox = t.path() / "sandbox";
  std::unique_ptr<LocalEndpoint> ep;

  explicit Fixture(fs::path agent = FERRY_AGENT_PATH) {
    write_file(local / "train.py", "print('hi')\n");
    for (int d = 0; d < kDirs; ++d)
      for (int f = 0; f < kFilesPerDir; ++f) write_file(sandbox / "proj" / fmt::format("d{}/f{}.txt", d, f), "x");
    LocalEndpointOptions o;
    o.agent = std::move(agent);
    o.root = sandbox;
    ep = std::make_unique<LocalEndpoint>(o);
    auto info = ep->connect();
    BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? "" : info.error().message));
  }
  SyncEngine engine() { return SyncEngine(*ep, SyncTarget{local, "proj", "local", "~/proj", {}, {}}); }
};

std::size_t fd_count(pid_t pid) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(fmt::format("/proc/{}/fd", pid))) ++n;
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_big_remote_listing_comes_in_pages_with_progress) {
  Fixture f;
  std::vector<std::uint64_t> seen;
  SyncOptions o;
  o.dry_run = true;
  o.list_page_entries = 300;
  o.listing_progress = [&](std::uint64_t listed) { seen.push_back(listed); };
  auto s = f.engine().push(o);
  BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
  BOOST_TEST(!s->cancelled);
  BOOST_TEST(s->files_sent == 1u);  // the plan saw the whole remote: nothing else is new
  BOOST_TEST(seen.size() == (kRemoteEntries + 299) / 300);
  for (std::size_t i = 0; i < seen.size(); ++i)
    BOOST_TEST(seen[i] == std::min<std::uint64_t>((i + 1) * 300, kRemoteEntries));
}

BOOST_AUTO_TEST_CASE(a_sync_cancelled_during_the_listing_stops_it_and_the_agent_lets_go) {
  Fixture f;
  const pid_t agent = f.ep->child_pid();
  // The agent keeps a descriptor per sync base it has served (its writers): count after those.
  BOOST_REQUIRE(f.ep->call("sync/state", json{{"base", "proj"}}).has_value());
  const std::size_t fds_before = fd_count(agent);
  std::atomic<bool> cancel{false};
  std::vector<std::uint64_t> seen;
  SyncOptions o;
  o.list_page_entries = 300;
  o.cancelled = [&] { return cancel.load(); };
  // The user presses Ctrl-C (or the IDE cancels sync/push) once two pages are in.
  o.listing_progress = [&](std::uint64_t listed) {
    seen.push_back(listed);
    if (seen.size() == 2) cancel = true;
  };
  auto s = f.engine().push(o);
  BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
  BOOST_TEST(s->cancelled);
  BOOST_TEST(seen.size() == 2u);  // no page was asked for after the cancel
  BOOST_TEST(s->files_sent == 0u);
  BOOST_TEST(!fs::exists(f.sandbox / "proj/train.py"));
  BOOST_TEST(s->one_line().starts_with("(cancelled) "), s->one_line());
  // The walk's open directories were released at once (not left for newer listings to evict),
  // and the agent answers the next request.
  BOOST_TEST(fd_count(agent) == fds_before);
  SyncOptions again;
  again.list_page_entries = 300;
  auto s2 = f.engine().push(again);
  BOOST_REQUIRE_MESSAGE(s2.has_value(), (s2 ? "" : s2.error().message));
  BOOST_TEST(!s2->cancelled);
  BOOST_TEST(s2->files_sent == 1u);
  BOOST_TEST(fs::exists(f.sandbox / "proj/train.py"));
}

BOOST_AUTO_TEST_CASE(a_cursor_the_agent_does_not_hold_is_an_error_that_says_what_to_do) {
  Fixture f;
  auto r = f.ep->call("sync/list", json{{"base", "proj"}, {"cursor", 12345}});
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().message.find("start a new listing") != std::string::npos, r.error().message);
}

// In-process, no privileges needed: /dev/shm is its own tmpfs on Linux systems and containers,
// so a listing rooted at /dev must list "shm" as a directory and not walk into it.
bool shm_is_its_own_filesystem() {
  struct stat dev {}, shm {};
  return ::stat("/dev", &dev) == 0 && ::stat("/dev/shm", &shm) == 0 && S_ISDIR(shm.st_mode) && shm.st_dev != dev.st_dev;
}

// Not skipped where the condition does not hold: a skipped test would count as passed.
BOOST_AUTO_TEST_CASE(the_tree_listing_stays_on_the_root_filesystem) {
  BOOST_REQUIRE_MESSAGE(shm_is_its_own_filesystem(), "/dev/shm is not a separate filesystem here");
  TempDir t;
  write_file(fs::path("/dev/shm") / t.path().filename() / "inside-shm", "x");  // something a walk would find
  auto w = agent::FileWriter::open("/dev");
  BOOST_REQUIRE(w.has_value());
  auto lister = agent::TreeLister::open(*w);
  BOOST_REQUIRE(lister.has_value());
  std::set<std::string> paths;
  std::vector<std::string> mounts;
  while (!lister->done()) {
    for (auto& e : lister->next(100)) paths.insert(e.path);
    for (auto& m : lister->take_other_filesystems()) mounts.push_back(m);
  }
  fs::remove_all(fs::path("/dev/shm") / t.path().filename());
  BOOST_TEST(paths.contains("shm"));
  BOOST_TEST(std::none_of(paths.begin(), paths.end(), [](const std::string& p) { return p.starts_with("shm/"); }));
  BOOST_TEST((std::find(mounts.begin(), mounts.end(), "shm") != mounts.end()));
}

// Through the agent, with a real mount under the mapping root: a tmpfs at proj/data holding a
// file. The listing names data/ (a directory, reported as another filesystem) and nothing in it.
BOOST_AUTO_TEST_CASE(the_agent_listing_does_not_walk_into_a_mount_under_the_root) {
  const auto unavailable = ferry::test::tmpfs_agent_unavailable();
  BOOST_REQUIRE_MESSAGE(!unavailable, "a private tmpfs is needed: " << unavailable.value_or(""));
  TempDir wrap;
  Fixture f(ferry::test::write_tmpfs_agent(wrap.path(), FERRY_AGENT_PATH, "1m", "proj/data",
                                            "echo secret > \"$T/hidden.txt\" && mkdir \"$T/sub\""));
  for (bool paged : {false, true}) {
    BOOST_TEST_CONTEXT("paged " << paged) {
      json params{{"base", "proj"}, {"known", json::array()}};
      if (paged) params["pageEntries"] = 100000;
      auto r = f.ep->call("sync/list", params);
      BOOST_REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().message));
      std::set<std::string> paths;
      for (const auto& row : r->at("entries")) paths.insert(row.at(0).get<std::string>());
      BOOST_TEST(paths.contains("data"));
      BOOST_TEST(!paths.contains("data/hidden.txt"));
      BOOST_TEST(!paths.contains("data/sub"));
      BOOST_TEST(paths.size() == kRemoteEntries + 1);
      BOOST_TEST(r->at("otherFilesystems") == json::array({"data"}));
    }
  }
  // A push plans against that listing without error and leaves the mount's contents alone.
  SyncOptions o;
  o.deletes = DeleteMode::mirror;
  o.confirm_mass_delete = [](const std::string&, std::size_t) { return false; };
  auto s = f.engine().push(o);
  BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
  BOOST_TEST(s->errors.empty());
  for (const auto& held : s->held_deletes) BOOST_TEST(!held.starts_with("data/"), held);
}

// ferry.json refuses "/" and "~" by name; the agent refuses what a config cannot tell: a root
// that resolves to the whole filesystem or to the home directory it runs in (a home elsewhere
// than /home/USER, a symlink to ~), before listing or writing anything there.
BOOST_AUTO_TEST_CASE(the_agent_refuses_to_sync_at_slash_or_at_its_home) {
  TempDir t;
  const fs::path home = t.path() / "home";
  fs::create_directories(home / "work");
  fs::create_symlink(home, t.path() / "link-to-home");
  const char* saved = std::getenv("HOME");
  const std::string saved_home = saved ? saved : "";
  ::setenv("HOME", home.c_str(), 1);  // the agent inherits our environment
  struct Restore {
    std::string home;
    bool had;
    ~Restore() { had ? ::setenv("HOME", home.c_str(), 1) : ::unsetenv("HOME"); }
  } restore{saved_home, saved != nullptr};

  struct Case {
    fs::path root;
    std::string base;
    const char* why;  // "" = allowed
  };
  for (const Case& c : {Case{t.path() / "link-to-home", "", "is the home directory"},
                        Case{t.path(), "home", "is the home directory"},
                        Case{"/", "", "whole filesystem"},
                        Case{t.path() / "link-to-home", "work", ""}}) {
    BOOST_TEST_CONTEXT(c.root << " base '" << c.base << "'") {
      LocalEndpointOptions o;
      o.agent = FERRY_AGENT_PATH;
      o.root = c.root;
      LocalEndpoint ep(o);
      BOOST_REQUIRE(ep.connect().has_value());
      for (const char* method : {"sync/state", "sync/list"}) {
        auto r = ep.call(method, json{{"base", c.base}});
        if (*c.why == '\0') {
          BOOST_TEST(r.has_value(), method);
          continue;
        }
        BOOST_REQUIRE(!r.has_value());
        BOOST_TEST(r.error().message.find(c.why) != std::string::npos, r.error().message);
        BOOST_TEST(r.error().message.find("~/work/NAME") != std::string::npos, r.error().message);
      }
    }
  }
}

// Issue #41: ferry.json refuses /etc by name, but "~/data" may be a symlink to /etc on the box.
// The agent judges its root where it resolves, with the config's rule: a link to /etc, a root
// below a link to /usr are refused with both paths named; a missing root under a link to /etc is
// not created there (the agent does not start); a link to a project directory is fine.
BOOST_AUTO_TEST_CASE(the_agent_judges_its_root_where_it_resolves) {
  TempDir t;
  fs::create_directories(t.path() / "project");
  fs::create_symlink("/etc", t.path() / "link-to-etc");
  fs::create_symlink("/usr", t.path() / "link-to-usr");
  fs::create_symlink(t.path() / "project", t.path() / "link-to-project");
  struct Case {
    fs::path root;
    std::string resolved;  // "" = allowed
  };
  for (const Case& c : {Case{t.path() / "link-to-etc", "/etc"}, Case{t.path() / "link-to-usr" / "share", "/usr/share"},
                        Case{t.path() / "link-to-project", ""}}) {
    BOOST_TEST_CONTEXT(c.root) {
      LocalEndpointOptions o;
      o.agent = FERRY_AGENT_PATH;
      o.root = c.root;
      LocalEndpoint ep(o);
      BOOST_REQUIRE(ep.connect().has_value());
      for (const char* method : {"sync/state", "sync/list"}) {
        auto r = ep.call(method, json{{"base", ""}});
        if (c.resolved.empty()) {
          BOOST_TEST(r.has_value(), method);
          continue;
        }
        BOOST_REQUIRE(!r.has_value());
        const std::string& m = r.error().message;
        const std::string both = fmt::format("\"{}\" resolves to \"{}\"", c.root.string(), c.resolved);
        BOOST_TEST(m.find(both) != std::string::npos, m);
        BOOST_TEST(m.find("system directory") != std::string::npos, m);
        BOOST_TEST(m.find("~/work/NAME") != std::string::npos, m);
      }
    }
  }
  const std::string fresh = "ferry-listing-test-" + std::to_string(::getpid());
  LocalEndpointOptions o;
  o.agent = FERRY_AGENT_PATH;
  o.root = t.path() / "link-to-etc" / fresh;
  LocalEndpoint ep(o);
  BOOST_TEST(!ep.connect().has_value());
  BOOST_TEST(!fs::exists("/etc/" + fresh));
}

// A pull's listing (hashAtMost) leaves a big file's hash out, so a new checkpoint is not read on
// the box before it moves; small files come hashed; an `only` listing hashes the big one (in
// pieces) when the plan needs it; without hashAtMost every file is hashed, as before.
BOOST_AUTO_TEST_CASE(files_over_hash_at_most_are_listed_without_a_hash) {
  Fixture f;
  const auto big = ferry::test::random_bytes<std::vector<std::uint8_t>>(3u << 20, 5);
  write_file(f.sandbox / "proj/out/big.bin", std::string(big.begin(), big.end()));
  write_file(f.sandbox / "proj/out/small.txt", "loss 0.1\n");
  auto rows = [&](json params) {
    params["base"] = "proj";
    params["hashAll"] = true;
    auto r = f.ep->call("sync/list", params, std::chrono::seconds(30));
    BOOST_REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().message));
    std::map<std::string, json> out;
    for (const auto& row : r->at("entries")) out[row[0].get<std::string>()] = row[6];
    return out;
  };
  const auto want = ferry::delta::hash128(big);
  const json want_json = json::binary_t(std::vector<std::uint8_t>(want.begin(), want.end()));
  auto capped = rows(json{{"hashAtMost", 1u << 20}});
  BOOST_TEST(capped.at("out/big.bin").is_null());
  BOOST_TEST(capped.at("out/small.txt").is_binary());
  auto only = rows(json{{"only", {"out/big.bin"}}});
  BOOST_TEST((only.at("out/big.bin") == want_json));
  // Now the agent's hash cache may hold it (if the file was 100 ms old when read): a capped
  // listing then gives that hash, never another.
  const json again = rows(json{{"hashAtMost", 1u << 20}}).at("out/big.bin");
  BOOST_TEST((again.is_null() || again == want_json));
  auto all = rows(json::object());
  BOOST_TEST((all.at("out/big.bin") == want_json));
}
