// The agent's read-only pull source (sync/list, sync/read, sync/readDelta with `source`), through
// the real ferry-agent binary: it serves Python sources outside the mapping root and nothing else;
// every writing method naming a source is refused and leaves the source untouched; "/" and
// relative or missing sources are refused; a symlink cannot lead a read out of the source.
#define BOOST_TEST_MODULE read_only_source
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <set>

#include "helper/remote/local_endpoint.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/sandbox_agent.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using ferry::remote::LocalEndpoint;
using ferry::remote::LocalEndpointOptions;

namespace {

struct Fixture {
  ferry::test::TempDir t{"ferry-ro-source"};
  fs::path sandbox = t / "sandbox";
  fs::path site = t / "site-packages";  // outside the agent's root
  std::unique_ptr<LocalEndpoint> ep;
  Fixture() {
    fs::create_directories(sandbox / "proj");
    ferry::test::write_file(site / "pkg" / "__init__.py", "X = 1\n");
    ferry::test::write_file(site / "pkg" / "stub.pyi", "X: int\n");
    ferry::test::write_file(site / "pkg" / "_native.cpython-311-x86_64-linux-gnu.so", "ELF");
    ferry::test::write_file(site / "pkg" / "__pycache__" / "__init__.cpython-311.pyc", "pyc");
    ferry::test::write_file(site / "pkg-1.0.dist-info" / "METADATA", "Name: pkg\n");
    ferry::test::write_file(t / "secret.py", "KEY = 'do not serve'\n");
    fs::create_symlink(t / "secret.py", site / "pkg" / "leak.py");
    ep = ferry::test::connect_sandbox_agent(FERRY_AGENT_PATH, sandbox);
  }
  std::expected<json, ferry::remote::ResponseError> call(const std::string& method, json params) {
    return ep->call(method, std::move(params), std::chrono::seconds(30));
  }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(lists_and_reads_python_sources_only, Fixture) {
  auto listed = call("sync/list", json{{"source", site.string()}, {"hashAll", true}});
  BOOST_TEST_REQUIRE(listed.has_value(), (listed ? "" : listed.error().message));
  std::set<std::string> paths;
  for (const auto& row : listed->at("entries")) paths.insert(row[0].get<std::string>());
  BOOST_TEST((paths == std::set<std::string>{"pkg-1.0.dist-info/METADATA", "pkg/__init__.py", "pkg/stub.pyi"}));

  auto read = call("sync/read", json{{"source", site.string()}, {"path", "pkg/__init__.py"}});
  BOOST_TEST_REQUIRE(read.has_value(), (read ? "" : read.error().message));
  BOOST_TEST(read->at("rawSize") == 6);
  auto so = call("sync/read", json{{"source", site.string()}, {"path", "pkg/_native.cpython-311-x86_64-linux-gnu.so"}});
  BOOST_TEST_REQUIRE(!so.has_value());
  BOOST_TEST(so.error().message.find("Python sources only") != std::string::npos, so.error().message);
  auto leak = call("sync/read", json{{"source", site.string()}, {"path", "pkg/leak.py"}});
  BOOST_TEST_REQUIRE(!leak.has_value());
  BOOST_TEST(leak.error().message.find("symbolic link") != std::string::npos, leak.error().message);  // O_NOFOLLOW
  auto up = call("sync/read", json{{"source", site.string()}, {"path", "../secret.py"}});
  BOOST_TEST(!up.has_value());
}

BOOST_FIXTURE_TEST_CASE(writes_never_reach_a_source, Fixture) {
  const json data = json::binary_t(std::vector<std::uint8_t>{});
  for (const auto& [method, params] : std::vector<std::pair<std::string, json>>{
           {"sync/writeBatch", json{{"files", json::array()}}},
           {"sync/delete", json{{"paths", json::array({"pkg/__init__.py"})}}},
           {"sync/mkdir", json{{"dirs", json::array({json{{"path", "new"}}})}}},
           {"sync/symlink", json{{"links", json::array({json{{"path", "l"}, {"target", "/etc"}}})}}},
           {"sync/setAttrs", json{{"entries", json::array({json{{"path", "pkg/__init__.py"}, {"mode", 511}}})}}},
           {"sync/fileBegin", json{{"path", "pkg/new.py"}, {"size", 1}, {"mode", 420}, {"mtimeNs", 0}}},
           {"sync/signature", json{{"path", "pkg/__init__.py"}}},
           {"sync/state", json::object()}}) {
    json p = params;
    p["source"] = site.string();
    auto r = call(method, p);
    BOOST_TEST_REQUIRE(!r.has_value(), method);
    BOOST_TEST(r.error().message.find("read-only pull source") != std::string::npos, method + ": " + r.error().message);
  }
  BOOST_TEST(fs::exists(site / "pkg" / "__init__.py"));
  BOOST_TEST(((fs::status(site / "pkg" / "__init__.py").permissions() & fs::perms::others_exec) == fs::perms::none));
  BOOST_TEST(!fs::exists(site / "new"));
  BOOST_TEST(!fs::exists(site / ".ferry"));  // no sync state written into the source either
  // A listing with `sweep` (it removes temp files) is refused too.
  auto sweep = call("sync/list", json{{"source", site.string()}, {"sweep", true}});
  BOOST_TEST(!sweep.has_value());
}

BOOST_FIXTURE_TEST_CASE(bad_sources_are_refused, Fixture) {
  for (const std::string& s : std::vector<std::string>{"/", "relative/dir", (t / "missing").string()}) {
    auto r = call("sync/list", json{{"source", s}});
    BOOST_TEST_REQUIRE(!r.has_value(), s);
    BOOST_TEST(!fs::exists(t / "missing"));  // a missing source is never created
  }
}
