// ferry as users install it: `cmake --install` into a temporary prefix, then the installed ferry
// (never the build tree's) against the real sshd fixture, with no $FERRY_AGENT*: connect uploads
// the agent from the prefix's libexec/ferry/, sync and run work, `ferry doctor` fails on an agent
// of another build, and `ferry ide pycharm` with the prefix's bin/ on PATH writes `ferry`, not a
// path. Then the packages CPack makes of the same tree: the .deb (contents, dependencies from
// dpkg-shlibdeps, lintian without errors, `ferry --version` from a `dpkg -x` scratch root) and the
// relocatable tarball (its own libraries, glibc symbols no newer than Ubuntu 22.04's 2.35).
#define BOOST_TEST_MODULE installed_ferry
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/ferry_process.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::test::read_file;
using ferry::test::run_shell;
using ferry::test::write_file;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// Quoted for sh (the paths are the test's own temp folders: no quotes in them).
std::string q(const fs::path& p) {
  std::string s(1, '\'');
  s += p.string();
  s += '\'';
  return s;
}

// The commit this build is of, as `ferry --version` of the build tree says it.
std::string build_version_line() {
  auto r = run_shell(q(FERRY_BUILD_BIN) + " --version");
  BOOST_REQUIRE(r.status == 0);
  return r.out;
}

// One install shared by the cases (an install is ~40 MB of copying); no agent from the environment.
struct Installed {
  ferry::test::TempDir dir{"ferry-installed"};
  fs::path prefix() const { return dir / "prefix"; }
  fs::path ferry() const { return prefix() / "bin" / "ferry"; }
  Installed() {
    for (const char* v : {"FERRY_AGENT", "FERRY_AGENT_X86_64", "FERRY_AGENT_AARCH64"}) ::unsetenv(v);
    auto r = run_shell(q(FERRY_CMAKE) + " --install " + q(FERRY_BUILD_DIR) + " --prefix " + q(prefix()) + " 2>&1");
    BOOST_REQUIRE_MESSAGE(r.status == 0, r.out);
  }
};
Installed* installed = nullptr;
struct InstalledSuite {
  Installed i;
  InstalledSuite() { installed = &i; }
  ~InstalledSuite() { installed = nullptr; }
};

struct Done {
  int status;
  std::string out, err;
};
Done ferry_done(const fs::path& cwd, const std::vector<std::string>& args) {
  ferry::test::FerryProcess f(installed->ferry(), cwd, args);
  const int status = f.wait(120s);
  return {status, f.out(), f.err()};
}

// A project on the sshd fixture's box.
struct Project {
  ferry::test::SshdFixture sshd;
  ferry::test::TempDir dir{"ferry-installed-project"};
  fs::path remote() const { return sshd.home() / "proj"; }
  Project() {
    sshd.trust_host_key();
    write_file(dir / "ferry.json", nlohmann::json{{"name", "installed"},
                                                  {"host", sshd.alias()},
                                                  {"sshConfig", sshd.ssh_config().string()},
                                                  {"interpreter", "/usr/bin/python3 -u"},
                                                  {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}},
                                                  {"launch", {{{"name", "hello"}, {"script", "hello.py"}}}}}
                                       .dump(2));
    write_file(dir / "hello.py", "print('hello from the box')\n");
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(from_a_prefix, *boost::unit_test::fixture<InstalledSuite>())

BOOST_AUTO_TEST_CASE(the_layout_has_everything_a_user_needs) {
  const fs::path p = installed->prefix();
  for (const char* f : {"bin/ferry", "libexec/ferry/ferry-agent", "libexec/ferry/ferry-agent-aarch64",
                        "share/ferry/schemas/ferry.schema.json", "share/ferry/schemas/train-config.schema.json",
                        "share/man/man1/ferry.1.gz", "share/bash-completion/completions/ferry",
                        "share/zsh/site-functions/_ferry", "share/fish/vendor_completions.d/ferry.fish",
                        "share/doc/ferry/README.md", "share/doc/ferry/copyright", "share/doc/ferry/docs/sync.md"})
    BOOST_TEST(fs::is_regular_file(p / f), f);
  const auto version = run_shell(q(installed->ferry()) + " --version");
  BOOST_TEST(version.status == 0);
  BOOST_TEST(version.out == build_version_line());
  BOOST_TEST(std::regex_search(version.out, std::regex(R"(^ferry \d+\.\d+\.\d+ \(commit [0-9a-f]{12}(-dirty)?\)\n$)")), version.out);
  // The man page is one `man` reads.
  const auto man = run_shell("MANPAGER=cat man -l " + q(p / "share/man/man1/ferry.1.gz") + " 2>&1");
  BOOST_TEST(man.status == 0, man.out.substr(0, 400));
  BOOST_TEST(man.out.find("COMMANDS") != std::string::npos, man.out.substr(0, 400));
  BOOST_TEST(man.out.find("ferry sync") != std::string::npos, man.out.substr(0, 400));
}

BOOST_AUTO_TEST_CASE(connect_uploads_the_installed_agent_then_sync_and_run) {
  Project p;
  const auto connected = ferry_done(p.dir.path(), {"connect", "--json"});
  BOOST_REQUIRE_MESSAGE(connected.status == 0, connected.out + connected.err);
  const auto j = nlohmann::json::parse(connected.out.substr(connected.out.find('{')));
  BOOST_TEST(j["agent"]["installed"] == true, j.dump());
  // What landed on the box is the prefix's agent, byte for byte.
  const fs::path uploaded = fs::path(j["agent"]["path"].get<std::string>());
  BOOST_REQUIRE_MESSAGE(fs::exists(uploaded), uploaded.string());
  BOOST_TEST(read_file(uploaded) == read_file(installed->prefix() / "libexec/ferry/ferry-agent"));

  const auto synced = ferry_done(p.dir.path(), {"sync"});
  BOOST_REQUIRE_MESSAGE(synced.status == 0, synced.err);
  BOOST_TEST(read_file(p.remote() / "hello.py") == read_file(p.dir / "hello.py"));
  const auto ran = ferry_done(p.dir.path(), {"run", "--", "hello.py"});
  BOOST_TEST(ran.status == 0, ran.err);
  BOOST_TEST(ran.out.find("hello from the box") != std::string::npos, ran.out + ran.err);
}

BOOST_AUTO_TEST_CASE(doctor_fails_on_an_agent_of_another_build) {
  Project p;
  const fs::path agent = installed->prefix() / "libexec/ferry/ferry-agent-aarch64";
  const std::string kept = read_file(agent);
  auto doctor = ferry_done(p.dir.path(), {"doctor"});
  BOOST_TEST(doctor.out.find("[pass] agent aarch64") != std::string::npos, doctor.out);
  BOOST_TEST(doctor.out.find("[pass] agent x86_64") != std::string::npos, doctor.out);
  // An install half upgraded: the aarch64 agent is an older build's.
  std::string older = kept;
  const auto at = older.find("FERRY-BUILD 0.");
  BOOST_REQUIRE(at != std::string::npos);
  older.replace(at, std::string("FERRY-BUILD 0.").size(), "FERRY-BUILD 9.");
  write_file(agent, older);
  doctor = ferry_done(p.dir.path(), {"doctor"});
  write_file(agent, kept);
  BOOST_TEST(doctor.status == 1, doctor.out + doctor.err);
  BOOST_TEST(doctor.out.find("[FAIL] agent aarch64: " + agent.string() + " is ferry 9.") != std::string::npos, doctor.out);
  BOOST_TEST(doctor.out.find("reinstall ferry") != std::string::npos, doctor.out);
  // Gone altogether: the other architecture's agent only warns.
  fs::rename(agent, agent.string() + ".away");
  doctor = ferry_done(p.dir.path(), {"doctor"});
  fs::rename(agent.string() + ".away", agent);
  BOOST_TEST(doctor.out.find("[warn] agent aarch64") != std::string::npos, doctor.out);
}

BOOST_AUTO_TEST_CASE(ide_pycharm_names_ferry_on_path) {
  Project p;
  const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  ::setenv("PATH", ((installed->prefix() / "bin").string() + ":" + path).c_str(), 1);
  const auto ide = ferry_done(p.dir.path(), {"ide", "pycharm"});
  ::setenv("PATH", path.c_str(), 1);
  BOOST_REQUIRE_MESSAGE(ide.status == 0, ide.out + ide.err);
  const std::string run = read_file(p.dir / ".run" / "ferry hello.run.xml");
  BOOST_TEST(run.find("value=\"ferry run") != std::string::npos, run);
  BOOST_TEST(run.find(installed->prefix().string()) == std::string::npos, run);
  BOOST_TEST(run.find(FERRY_BUILD_DIR) == std::string::npos, run);
}

BOOST_AUTO_TEST_SUITE_END()

namespace {

// `cpack -G GEN` of the build into `out`: the package file it wrote.
fs::path make_package(const std::string& generator, const fs::path& out) {
  auto r = run_shell(q(FERRY_CPACK) + " -G " + generator + " --config " + q(fs::path(FERRY_BUILD_DIR) / "CPackConfig.cmake") +
                     " -B " + q(out) + " 2>&1");
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.out);
  for (const auto& e : fs::directory_iterator(out))
    if (e.is_regular_file() && e.path().extension() == (generator == "DEB" ? ".deb" : ".gz")) return e.path();
  BOOST_FAIL("cpack -G " + generator + " wrote no package: " + r.out);
  return {};
}

// The newest `tag`_x.y symbol version (GLIBC, GLIBCXX) any dynamic ELF file under `dir` needs,
// as "2.34".
std::string newest_needed(const fs::path& dir, const std::string& tag) {
  auto r = run_shell("find " + q(dir) + " -type f -exec sh -c 'file -b \"$1\" | grep -q \"^ELF.*dynamic\" && objdump -T \"$1\"' _ {} \\; "
                     "| grep -o '" + tag + "_[0-9.]*' | sed s/" + tag + "_// | sort -uV | tail -1");
  return r.out.substr(0, r.out.find('\n'));
}

// "3.4.30" -> {3, 4, 30}
std::vector<int> version_parts(const std::string& v) {
  std::vector<int> parts;
  std::size_t at = 0;
  while (at < v.size()) {
    parts.push_back(std::stoi(v.substr(at)));
    at = v.find('.', at);
    at = at == std::string::npos ? v.size() : at + 1;
  }
  return parts;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_deb_installs_ferry_under_usr) {
  ferry::test::TempDir dir("ferry-deb");
  const fs::path deb = make_package("DEB", dir / "out");
  BOOST_TEST(deb.filename().string().starts_with("ferry_"), deb.string());
  const auto contents = run_shell("dpkg-deb -c " + q(deb));
  for (const char* f : {"./usr/bin/ferry", "./usr/libexec/ferry/ferry-agent", "./usr/libexec/ferry/ferry-agent-aarch64",
                        "./usr/share/man/man1/ferry.1.gz", "./usr/share/bash-completion/completions/ferry",
                        "./usr/share/zsh/vendor-completions/_ferry", "./usr/share/fish/vendor_completions.d/ferry.fish",
                        "./usr/share/doc/ferry/copyright", "./usr/share/ferry/schemas/ferry.schema.json"})
    BOOST_TEST(contents.out.find(std::string(f) + "\n") != std::string::npos, f << " in\n" << contents.out);
  // dpkg-shlibdeps named the libraries ferry links; libssh2 and libcrypto are linked in
  // (cmake/helper_deps.cmake), so no package of theirs.
  const auto depends = run_shell("dpkg-deb -f " + q(deb) + " Depends");
  for (const char* lib : {"libc6", "libstdc++6", "libspdlog"})
    BOOST_TEST(depends.out.find(lib) != std::string::npos, lib << " in " << depends.out);
  for (const char* lib : {"libssh2", "libssl"})
    BOOST_TEST(depends.out.find(lib) == std::string::npos, lib << " in " << depends.out);
  // libcurl is loaded for webhooks only, on the first one: recommended, not linked.
  BOOST_TEST(depends.out.find("libcurl") == std::string::npos, depends.out);
  const auto recommends = run_shell("dpkg-deb -f " + q(deb) + " Recommends");
  BOOST_TEST(recommends.out.find("libcurl4") != std::string::npos, recommends.out);
  const auto lintian = run_shell("lintian --tag-display-limit 0 " + q(deb) + " 2>&1");
  BOOST_TEST(lintian.out.find("E: ") == std::string::npos, lintian.out);
  const fs::path root = dir / "root";
  BOOST_REQUIRE(run_shell("dpkg -x " + q(deb) + " " + q(root)).status == 0);
  const auto version = run_shell(q(root / "usr/bin/ferry") + " --version");
  BOOST_TEST(version.status == 0);
  BOOST_TEST(version.out == build_version_line());
}

BOOST_AUTO_TEST_CASE(the_tarball_runs_from_anywhere_with_its_own_libraries) {
  ferry::test::TempDir dir("ferry-tgz");
  const fs::path tgz = make_package("TGZ", dir / "out");
  BOOST_TEST(tgz.filename().string().starts_with("ferry-"), tgz.string());
  BOOST_TEST(tgz.filename().string().ends_with("-linux-x86_64.tar.gz"), tgz.string());
  BOOST_REQUIRE(run_shell("tar -xzf " + q(tgz) + " -C " + q(dir.path())).status == 0);
  const fs::path top = dir / tgz.filename().string().substr(0, tgz.filename().string().size() - std::string(".tar.gz").size());
  BOOST_REQUIRE_MESSAGE(fs::is_regular_file(top / "bin/ferry"), top.string());
  BOOST_TEST(fs::is_regular_file(top / "libexec/ferry/ferry-agent"));
  BOOST_TEST(fs::exists(top / "lib/ferry/libspdlog.so.1.10"));
  // Moved elsewhere after unpacking, it still loads its own copies, not the system's.
  fs::rename(top, dir / "moved");
  const auto ldd = run_shell("ldd " + q(dir / "moved/bin/ferry"));
  BOOST_TEST(ldd.out.find((dir / "moved/bin/../lib/ferry/libspdlog.so.1.10").string()) != std::string::npos, ldd.out);
  BOOST_TEST(ldd.out.find("libssh2") == std::string::npos, ldd.out);  // linked in
  BOOST_TEST(ldd.out.find("libcrypto") == std::string::npos, ldd.out);
  BOOST_TEST(ldd.out.find("not found") == std::string::npos, ldd.out);
  // Everything else it loads is glibc's or GCC's runtime, which every laptop it targets has.
  const std::regex system_lib(R"(^(linux-vdso|ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libresolv|libutil|libstdc\+\+|libgcc_s)\.so)");
  std::istringstream lines(ldd.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, std::regex(R"(^\s*(\S+) => (\S+))"))) continue;
    if (m[2].str().starts_with((dir / "moved/").string())) continue;
    BOOST_TEST(std::regex_search(m[1].str(), system_lib), "loaded from the system: " << line);
  }
  const auto version = run_shell("env -i " + q(dir / "moved/bin/ferry") + " --version");
  BOOST_TEST(version.out == build_version_line());
  // Ubuntu 22.04 has glibc 2.35 and GCC 12's libstdc++ (GLIBCXX_3.4.30): nothing in the tarball
  // may need newer.
  const std::string glibc = newest_needed(dir / "moved", "GLIBC");
  BOOST_REQUIRE(!glibc.empty());
  BOOST_TEST((version_parts(glibc) <= std::vector<int>{2, 35}), "needs GLIBC_" << glibc);
  const std::string glibcxx = newest_needed(dir / "moved", "GLIBCXX");
  BOOST_REQUIRE(!glibcxx.empty());
  BOOST_TEST((version_parts(glibcxx) <= std::vector<int>{3, 4, 30}), "needs GLIBCXX_" << glibcxx);
  BOOST_TEST(!fs::exists(dir / "moved/lib/ferry/libstdc++.so.6"));
}
