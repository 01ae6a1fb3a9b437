// mapping_target / local_endpoint_options: where each kind of mapping lands, for the local host
// (sandbox-relative, absolute) and over SSH, with the project's excludes and protected paths.
#define BOOST_TEST_MODULE mapping_target
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include "helper/sync/mapping_target.hpp"

using namespace ferry;

namespace {

deploy::ProjectConfig project(const std::string& host) {
  deploy::ProjectConfig p;
  p.root = "/tmp/ferry-mapping-target-test";
  p.name = "proj";
  p.host = host;
  p.exclude = {"*.ckpt"};
  p.protect = {"/data/"};
  return p;
}

deploy::Mapping mapping(const std::string& local, const std::string& remote) {
  deploy::Mapping m;
  m.local = local;
  m.remote = remote;
  return m;
}

}  // namespace

BOOST_AUTO_TEST_CASE(local_host_sandbox_paths_become_the_base_under_its_root) {
  auto p = project("local");
  auto t = sync::mapping_target(p, mapping("src", "~/work/src"));
  BOOST_TEST(t.remote_base == "work/src");
  BOOST_TEST(t.local_root == std::filesystem::path("/tmp/ferry-mapping-target-test/src"));
  BOOST_TEST(t.host == "local");
  BOOST_TEST(t.remote_root == "~/work/src");
  BOOST_TEST(t.exclude == p.exclude);
  BOOST_TEST(t.protect == p.protect);
  auto o = sync::local_endpoint_options(p, mapping("src", "~/work/src"));
  BOOST_TEST(o.project_name == "proj");
  BOOST_TEST(o.root.empty());  // the sandbox
  BOOST_TEST(sync::mapping_target(p, mapping(".", "~")).remote_base == "");
  BOOST_TEST(sync::mapping_target(p, mapping(".", "rel/dir")).remote_base == "rel/dir");
}

BOOST_AUTO_TEST_CASE(absolute_local_paths_are_the_root_itself) {
  auto p = project("local");
  auto t = sync::mapping_target(p, mapping(".", "/srv/exp"));
  BOOST_TEST(t.remote_base == "");
  BOOST_TEST(sync::local_endpoint_options(p, mapping(".", "/srv/exp")).root == "/srv/exp");
}

BOOST_AUTO_TEST_CASE(over_ssh_the_agent_root_is_the_mapping) {
  auto p = project("gpu-box");
  auto t = sync::mapping_target(p, mapping(".", "~/work"));
  BOOST_TEST(t.remote_base == "");
  BOOST_TEST(t.host == "gpu-box");
  BOOST_TEST(t.protect == p.protect);
}

BOOST_AUTO_TEST_CASE(command_line_paths_become_mapping_relative) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("ferry-paths-in-mapping-" + std::to_string(::getpid()));
  fs::create_directories(root / "proj/src/pkg");
  fs::create_directory_symlink(root / "proj", root / "link");
  const fs::path local = fs::weakly_canonical(root / "proj/src");
  auto got = sync::paths_in_mapping(local,
                                    {"pkg/a.py", (local / "b.py").string(), "./pkg/../c.py", (root / "link/src/d.py").string(),
                                     "../other.py", (root / "proj/e.py").string(), ".", "pkg/", "pkg/gone.py"},
                                    local);
  BOOST_TEST(got.inside == (std::vector<std::string>{"pkg/a.py", "b.py", "c.py", "d.py", "pkg", "pkg/gone.py"}),
             boost::test_tools::per_element());
  BOOST_TEST(got.outside == (std::vector<std::string>{"../other.py", (root / "proj/e.py").string(), "."}),
             boost::test_tools::per_element());
  // Relative paths are read from the cwd given, not the mapping's root.
  auto from_pkg = sync::paths_in_mapping(local, {"a.py", "../b.py"}, local / "pkg");
  BOOST_TEST(from_pkg.inside == (std::vector<std::string>{"pkg/a.py", "b.py"}), boost::test_tools::per_element());
  fs::remove_all(root);
}

// Every mapping over the one agent: the first is its root, another on the local host lies in the
// sandbox (a base below the root) or is a directory of its own (absolute base); over SSH the
// others are their own directories. A mapping holding another's folder leaves it to that one.
BOOST_AUTO_TEST_CASE(every_mapping_gets_a_base_the_first_mappings_agent_can_serve) {
  auto p = project("local");
  p.mappings = {mapping(".", "~/work"), mapping("data/raw", "/srv/raw"), mapping("cfg", "~/cfg")};
  auto t = sync::mapping_targets(p);
  BOOST_REQUIRE_EQUAL(t.size(), 3u);
  BOOST_TEST(t[0].remote_base == "work");
  BOOST_TEST(t[1].remote_base == "/srv/raw");
  BOOST_TEST(t[2].remote_base == "cfg");
  BOOST_TEST(t[0].nested == (std::vector<std::string>{"data/raw", "cfg"}), boost::test_tools::per_element());
  BOOST_TEST(t[1].nested.empty());
  // An absolute first mapping roots the agent there: the sandbox is then reached by its path.
  p.mappings = {mapping("src", "/srv/exp"), mapping("cfg", "~/cfg")};
  t = sync::mapping_targets(p);
  BOOST_TEST(t[0].remote_base == "");
  BOOST_TEST(t[1].remote_base == (remote::default_sandbox_root("proj") / "cfg").string());
  auto ssh = project("gpu-box");
  ssh.mappings = {mapping("src", "~/work"), mapping("data", "/mnt/data/p"), mapping("cfg", "~/cfg")};
  t = sync::mapping_targets(ssh);
  BOOST_TEST(t[0].remote_base == "");
  BOOST_TEST(t[1].remote_base == "/mnt/data/p");
  BOOST_TEST(t[2].remote_base == "~/cfg");
}

BOOST_AUTO_TEST_CASE(a_path_goes_to_the_deepest_mapping_holding_it) {
  auto p = project("local");
  p.mappings = {mapping(".", "~/work"), mapping("data/raw", "/srv/raw"), mapping("cfg", "~/cfg")};
  const auto t = sync::mapping_targets(p);
  const std::filesystem::path root = t[0].local_root;
  auto in = sync::mapping_of(t, root / "data/raw/x.csv");
  BOOST_REQUIRE(in.has_value());
  BOOST_TEST(in->mapping == 1u);
  BOOST_TEST(in->rel == "x.csv");
  in = sync::mapping_of(t, root / "data/other.csv");
  BOOST_REQUIRE(in.has_value());
  BOOST_TEST(in->mapping == 0u);
  BOOST_TEST(in->rel == "data/other.csv");
  BOOST_TEST(!sync::mapping_of(t, root / "data/raw").has_value());  // a mapping's folder is no file
  BOOST_TEST(!sync::mapping_of(t, "/elsewhere/x").has_value());

  auto by = sync::paths_by_mapping(p, t, {"outputs", "data/raw/a", "cfg/"});
  BOOST_REQUIRE(by.has_value());
  BOOST_TEST((*by)[0] == (std::vector<std::string>{"outputs"}), boost::test_tools::per_element());
  BOOST_TEST((*by)[1] == (std::vector<std::string>{"a"}), boost::test_tools::per_element());
  BOOST_TEST((*by)[2] == (std::vector<std::string>{"."}), boost::test_tools::per_element());
  by = sync::paths_by_mapping(p, t, {"."});
  BOOST_REQUIRE(by.has_value());
  for (const auto& v : *by) BOOST_TEST(v == (std::vector<std::string>{"."}), boost::test_tools::per_element());
  p.mappings = {mapping("src", "~/a"), mapping("tools", "~/b")};
  auto lost = sync::paths_by_mapping(p, sync::mapping_targets(p), {"src/x", "docs"});
  BOOST_REQUIRE(!lost.has_value());
  BOOST_TEST(lost.error().find("'docs' in no mapping") != std::string::npos, lost.error());
  // One mapping: its paths, as they always were.
  p.mappings = {mapping("src", "~/a")};
  auto one = sync::paths_by_mapping(p, sync::mapping_targets(p), {"runs"});
  BOOST_REQUIRE(one.has_value());
  BOOST_TEST((*one)[0] == (std::vector<std::string>{"runs"}), boost::test_tools::per_element());
}
