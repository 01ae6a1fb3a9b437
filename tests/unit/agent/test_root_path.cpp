// Wire paths resolved inside the agent root: '..', absolute paths and symlink escapes refused;
// unicode and spaces fine.
#define BOOST_TEST_MODULE root_path
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "remote-runtime/agent/root_path.hpp"

namespace fs = std::filesystem;
using ferry::agent::FollowFinal;
using ferry::agent::RootPath;

namespace {

struct Sandbox {
  fs::path base;
  fs::path root;
  Sandbox() {
    std::string tmpl = (fs::temp_directory_path() / "ferry-root-XXXXXX").string();
    base = fs::canonical(::mkdtemp(tmpl.data()));
    root = base / "root";
    fs::create_directories(root / "dir" / "sub");
    fs::create_directories(base / "outside");
    std::ofstream(base / "outside" / "secret") << "s";
    std::ofstream(root / "dir" / "file.txt") << "x";
  }
  ~Sandbox() {
    std::error_code ec;
    fs::remove_all(base, ec);
  }
  RootPath open() const {
    auto r = RootPath::open(root);
    BOOST_REQUIRE_MESSAGE(r.has_value(), (r ? std::string() : r.error()));
    return *r;
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(plain_paths_resolve_inside) {
  Sandbox s;
  auto rp = s.open();
  auto r = rp.resolve("dir/file.txt");
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->absolute == s.root / "dir" / "file.txt");
  BOOST_TEST(r->relative == "dir/file.txt");
  BOOST_TEST(rp.resolve("./dir//sub/")->relative == "dir/sub");
  BOOST_TEST(rp.resolve("")->absolute == s.root);
  BOOST_TEST(rp.resolve(".")->relative == "");
  // Not-yet-existing paths (sync writes new files) are fine.
  BOOST_TEST(rp.resolve("new/deeper/file")->absolute == s.root / "new" / "deeper" / "file");
}

BOOST_AUTO_TEST_CASE(unicode_and_spaces_are_ok) {
  Sandbox s;
  fs::create_directories(s.root / "données été" / "日本語");
  auto r = s.open().resolve("données été/日本語/ a b .txt");
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->absolute == s.root / "données été" / "日本語" / " a b .txt");
  BOOST_TEST(s.open().resolve("a..b/..c/c..").has_value());  // dots that are not '..'
}

BOOST_AUTO_TEST_CASE(dotdot_and_absolute_are_refused) {
  Sandbox s;
  auto rp = s.open();
  for (const char* bad : {"..", "../outside/secret", "dir/../../outside", "dir/..", "a/b/../c", "/etc/passwd", "/",
                          "//x"}) {
    auto r = rp.resolve(bad);
    BOOST_TEST(!r.has_value(), bad);
  }
  BOOST_TEST(rp.resolve("../x").error().find("..") != std::string::npos);
  BOOST_TEST(rp.resolve("/etc/passwd").error().find("absolute") != std::string::npos);
  BOOST_TEST(!rp.resolve(std::string("a\0b", 3)).has_value());
  BOOST_TEST(!rp.resolve(std::string(5000, 'a')).has_value());
}

BOOST_AUTO_TEST_CASE(symlinked_directory_escaping_the_root_is_refused) {
  Sandbox s;
  fs::create_directory_symlink(s.base / "outside", s.root / "evil");
  fs::create_directory_symlink("../../outside", s.root / "dir" / "relevil");
  auto rp = s.open();
  auto r = rp.resolve("evil/secret");
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().find("symlink 'evil'") != std::string::npos, r.error());
  BOOST_TEST(!rp.resolve("dir/relevil/secret").has_value());
  BOOST_TEST(!rp.resolve("evil/new-file").has_value());  // writes through it too
  // The link itself may be stat'ed (lstat) but not followed.
  auto link = rp.resolve("evil");
  BOOST_REQUIRE(link.has_value());
  BOOST_TEST(link->absolute == s.root / "evil");
  BOOST_TEST(!rp.resolve("evil", FollowFinal::yes).has_value());
}

BOOST_AUTO_TEST_CASE(symlinks_staying_inside_are_followed) {
  Sandbox s;
  fs::create_directory_symlink("dir/sub", s.root / "shortcut");
  fs::create_symlink("file.txt", s.root / "dir" / "alias");
  auto rp = s.open();
  auto r = rp.resolve("shortcut/x");
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->absolute == s.root / "dir" / "sub" / "x");
  BOOST_TEST(rp.resolve("dir/alias", FollowFinal::yes)->absolute == s.root / "dir" / "file.txt");
}

BOOST_AUTO_TEST_CASE(dangling_and_looping_links) {
  Sandbox s;
  fs::create_directory_symlink(s.base / "not-there-yet", s.root / "dangling-out");
  fs::create_directory_symlink("missing-inside", s.root / "dangling-in");
  fs::create_directory_symlink("loop2", s.root / "loop1");
  fs::create_directory_symlink("loop1", s.root / "loop2");
  auto rp = s.open();
  BOOST_TEST(!rp.resolve("dangling-out/x").has_value());  // would escape once created
  auto in = rp.resolve("dangling-in/x");
  BOOST_REQUIRE(in.has_value());
  BOOST_TEST(in->absolute == s.root / "missing-inside" / "x");
  BOOST_TEST(!rp.resolve("loop1/x").has_value());
}

BOOST_AUTO_TEST_CASE(root_is_created_and_must_be_a_directory) {
  Sandbox s;
  auto created = RootPath::open(s.base / "fresh" / "nested");
  BOOST_REQUIRE(created.has_value());
  BOOST_TEST(fs::is_directory(s.base / "fresh" / "nested"));
  BOOST_TEST(!RootPath::open(s.root / "dir" / "file.txt").has_value());
}

// Issue #41: ferry.json judges a mapping root by its spelling; only the box knows where it leads.
// A root that resolves into a system directory is refused, naming both paths, and a missing one
// below such a link is not created there (as root, "~/link-to-etc/p" would have made /etc/p).
BOOST_AUTO_TEST_CASE(roots_are_judged_where_they_resolve) {
  Sandbox s;
  fs::create_symlink("/etc", s.base / "link-to-etc");
  fs::create_symlink("/usr", s.base / "link-to-usr");
  fs::create_symlink(s.root, s.base / "link-to-project");
  const std::string fresh = "ferry-root-test-" + std::to_string(::getpid());

  auto missing = RootPath::open(s.base / "link-to-etc" / fresh);
  BOOST_REQUIRE(!missing.has_value());
  BOOST_TEST(!fs::exists("/etc/" + fresh));
  BOOST_TEST(missing.error().find("\"" + (s.base / "link-to-etc" / fresh).string() + "\"") != std::string::npos, missing.error());
  BOOST_TEST(missing.error().find("resolves to \"/etc/" + fresh + "\"") != std::string::npos, missing.error());
  BOOST_TEST(missing.error().find("system directory") != std::string::npos, missing.error());
  // Two levels missing: the deepest existing ancestor is what resolves.
  BOOST_TEST(!RootPath::open(s.base / "link-to-etc" / fresh / "deeper").has_value());
  BOOST_TEST(!fs::exists("/etc/" + fresh));

  struct Case {
    fs::path given;
    const char* resolved;  // "" = accepted
    const char* why;
  };
  for (const Case& c : {Case{s.base / "link-to-etc", "/etc", "system directory"},
                        Case{s.base / "link-to-etc" / ".", "/etc", "system directory"},
                        Case{s.base / "link-to-usr" / "share", "/usr/share", "system directory"},
                        Case{s.base / "link-to-usr" / "share" / fresh, "", "system directory"},
                        Case{"/tmp", "/tmp", "shared by other users"},
                        Case{s.base / "link-to-project", "", ""},
                        Case{s.base / "link-to-project" / "new" / "p", "", ""}}) {
    BOOST_TEST_CONTEXT(c.given) {
      auto where = ferry::agent::resolve_root_location(c.given);
      BOOST_REQUIRE_MESSAGE(where.has_value(), (where ? std::string() : where.error()));
      auto refused = ferry::agent::resolved_root_refusal(c.given, *where);
      if (*c.why == '\0') {
        BOOST_TEST(!refused.has_value(), (refused ? *refused : std::string()));
        BOOST_TEST(where->string().starts_with(s.root.string()), *where);
        continue;
      }
      BOOST_REQUIRE(refused.has_value());
      BOOST_TEST(refused->find(c.why) != std::string::npos, *refused);
      BOOST_TEST(refused->find("~/work/NAME") != std::string::npos, *refused);
      if (*c.resolved && fs::path(c.resolved) != c.given)
        BOOST_TEST(refused->find(std::string("resolves to \"") + c.resolved + "\"") != std::string::npos, *refused);
    }
  }
  // A link to a project directory is that directory: opened, and the root is where it leads.
  auto linked = RootPath::open(s.base / "link-to-project");
  BOOST_REQUIRE(linked.has_value());
  BOOST_TEST(linked->root() == s.root);
  BOOST_TEST(linked->given() == s.base / "link-to-project");
}
