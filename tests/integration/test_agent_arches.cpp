// The right agent for the box, against a real sshd whose `uname` the test chooses (a script first
// on the box's PATH): an aarch64 box gets the aarch64 build, which then syncs a tree and runs a
// command under qemu-user (the real aarch64 agent speaking the real protocol; no binfmt here, so
// the uploaded build is a wrapper that starts it under qemu-aarch64-static); a box ferry has no
// agent for (FreeBSD, 32-bit ARM) is refused in one line and nothing is installed; an x86-64 box
// gets the x86-64 build, and another arch's build in the same directory (a shared home) stays; a
// box without SFTP gets its agent (the upload is `cat` on an exec channel).
#define BOOST_TEST_MODULE agent_arches
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "ferry/version.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "tests/integration/endpoint_options.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::test::SshdFixture;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// The box's bash reads .bashrc for an SSH command: $HOME/fakebin comes first on its PATH.
ferry::test::SshdOptions with_fake_bin() {
  ferry::test::SshdOptions o;
  o.bashrc = "PATH=\"$HOME/fakebin:$PATH\"\n";
  return o;
}

// `uname -sm` on the box says `says`; other uname calls are the real one's.
void box_uname(const SshdFixture& f, const std::string& says) {
  fs::create_directories(f.home() / "fakebin");
  ferry::test::write_file(f.home() / "fakebin" / "uname",
                          "#!/bin/sh\nif [ \"$*\" = -sm ]; then echo '" + says + "'; else exec /bin/uname \"$@\"; fi\n");
  fs::permissions(f.home() / "fakebin" / "uname", fs::perms::owner_all);
}

fs::path agent_dir(const SshdFixture& f) { return f.home() / ".cache/ferry/agent" / ferry::kVersion; }

std::vector<std::string> agents_in(const SshdFixture& f) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(agent_dir(f), ec))
    if (d.path().filename().string().starts_with("ferry-agent")) found.push_back(d.path().filename().string());
  std::sort(found.begin(), found.end());
  return found;
}

using Run = ferry::test::ShellRun;

// ferry with stdin closed and no terminal; stderr joins stdout. `env`: assignments put first.
Run run_ferry(const std::string& env, const std::string& args, const fs::path& cwd) {
  return ferry::test::run_shell("cd '" + cwd.string() + "' && " + env + " '" FERRY_BIN "' " + args + " </dev/null 2>&1");
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_box_without_an_agent_build_is_refused_in_one_line) {
  SshdFixture f(with_fake_bin());
  f.trust_host_key();
  for (const std::string says : {"FreeBSD amd64", "Linux armv7l", "Darwin arm64"}) {
    box_uname(f, says);
    ferry::remote::SshEndpoint e(ferry::test::endpoint_options_for(f));
    auto info = e.connect(20s);
    BOOST_REQUIRE(!info.has_value());
    BOOST_TEST(info.error().message == e.description() + " is " + says + ": ferry-agent runs on x86-64 and aarch64 Linux",
               info.error().message);
    BOOST_TEST((*info.error().data)["kind"] == "unsupportedBox");
    BOOST_TEST(agents_in(f).empty());
  }
}

BOOST_AUTO_TEST_CASE(an_x86_64_box_gets_that_build_and_keeps_another_archs) {
  SshdFixture f(with_fake_bin());
  f.trust_host_key();
  box_uname(f, "Linux x86_64");
  fs::create_directories(agent_dir(f));
  // Names an earlier install may have left: this arch's and pre-arch ones go, aarch64's stays.
  for (const char* name : {"ferry-agent", "ferry-agent-0123456789abcdef", "ferry-agent-x86_64-0123456789abcdef",
                           "ferry-agent-aarch64-0123456789abcdef"})
    ferry::test::write_file(agent_dir(f) / name, "#!/bin/sh\necho an old agent\n");
  ferry::remote::SshEndpoint e(ferry::test::endpoint_options_for(f));
  auto info = e.connect(20s);
  BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? "" : info.error().message) << "\n" << f.log());
  BOOST_TEST(info->arch == "x86_64");
  BOOST_TEST(e.install_report().installed);
  const auto ours = fs::path(e.install_report().remote_path).filename().string();
  BOOST_TEST(ours.starts_with("ferry-agent-x86_64-"));
  BOOST_TEST(ours.size() == std::string("ferry-agent-x86_64-").size() + 16);
  BOOST_TEST(agents_in(f) == (std::vector<std::string>{"ferry-agent-aarch64-0123456789abcdef", ours}));
  // A second connect finds it by name and says which file it started.
  ferry::remote::SshEndpoint again(ferry::test::endpoint_options_for(f));
  BOOST_REQUIRE(again.connect(20s).has_value());
  BOOST_TEST(!again.install_report().installed);
  BOOST_TEST(again.install_report().remote_path.ends_with("/" + ours));
}

BOOST_AUTO_TEST_CASE(an_aarch64_box_gets_the_aarch64_agent_which_syncs_and_runs) {
  SshdFixture f(with_fake_bin());
  f.trust_host_key();
  box_uname(f, "Linux aarch64");
  // What this ferry uploads for aarch64: the real aarch64 build, started under qemu-user by a
  // wrapper that also tells it how to start itself again (run supervisors).
  const fs::path wrapper = f.dir() / "ferry-agent-aarch64-under-qemu";
  ferry::test::write_file(wrapper, "#!/bin/sh\nFERRY_AGENT_SELF=\"$0\" exec qemu-aarch64-static '" FERRY_AGENT_AARCH64_PATH
                                   "' \"$@\"\n");
  fs::permissions(wrapper, fs::perms::owner_all);
  const fs::path project = f.dir() / "project";
  fs::create_directories(project / "src");
  ferry::test::write_file(project / "src" / "train.py", "print('hello from the box')\n");
  ferry::test::write_file(project / "data.bin", std::string(300000, 'x'));
  nlohmann::json cfg{{"name", "arm"},
                     {"host", f.alias()},
                     {"sshConfig", f.ssh_config().string()},
                     {"interpreter", "/usr/bin/python3 -u"},
                     {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}};
  ferry::test::write_file(project / "ferry.json", cfg.dump());
  const std::string env = "FERRY_AGENT='" FERRY_AGENT_PATH "' FERRY_AGENT_AARCH64='" + wrapper.string() + "'";

  Run connect = run_ferry(env, "connect", project);
  BOOST_REQUIRE_MESSAGE(connect.status == 0, connect.out);
  BOOST_TEST(connect.out.find(", Linux aarch64\n") != std::string::npos, connect.out);
  const auto installed = agents_in(f);
  BOOST_REQUIRE_EQUAL(installed.size(), 1u);
  BOOST_TEST(installed[0].starts_with("ferry-agent-aarch64-"));
  BOOST_TEST(ferry::test::read_file(agent_dir(f) / installed[0]) == ferry::test::read_file(wrapper));

  Run sync = run_ferry(env, "sync", project);
  BOOST_REQUIRE_MESSAGE(sync.status == 0, sync.out);
  BOOST_TEST(ferry::test::read_file(f.home() / "proj" / "src" / "train.py") == "print('hello from the box')\n");
  BOOST_TEST(fs::file_size(f.home() / "proj" / "data.bin") == 300000u);
  ferry::test::write_file(project / "src" / "train.py", "import sys\nprint('edited on arm', flush=True)\nsys.exit(3)\n");
  Run resync = run_ferry(env, "sync", project);
  BOOST_REQUIRE_MESSAGE(resync.status == 0, resync.out);
  BOOST_TEST(ferry::test::read_file(f.home() / "proj" / "src" / "train.py").find("edited on arm") != std::string::npos);

  // The run's supervisor is the aarch64 agent again (started through FERRY_AGENT_SELF): output
  // streams back and the exit status is ferry's.
  Run run = run_ferry(env, "run src/train.py", project);
  BOOST_TEST(run.status == 3, run.out);
  BOOST_TEST(run.out.find("edited on arm") != std::string::npos, run.out);
}

BOOST_AUTO_TEST_CASE(a_box_without_sftp_gets_its_agent) {
  ferry::test::SshdOptions o;
  o.sftp = false;
  SshdFixture f(o);
  f.trust_host_key();
  ferry::remote::SshEndpoint e(ferry::test::endpoint_options_for(f));
  auto info = e.connect(20s);
  BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? "" : info.error().message) << "\n" << f.log());
  BOOST_TEST(e.install_report().installed);
  BOOST_TEST(ferry::test::read_file(e.install_report().remote_path) == ferry::test::read_file(FERRY_AGENT_PATH));
  struct stat st {};
  BOOST_REQUIRE(::stat(e.install_report().remote_path.c_str(), &st) == 0);
  BOOST_TEST((st.st_mode & 0777) == 0700u);
  BOOST_TEST(e.call("agent/ping", nlohmann::json::object()).has_value());
}
