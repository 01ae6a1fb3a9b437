// agent_builds: which build a box's `uname -sm` gets, the one-line refusal for the rest, and where
// each arch's build is looked for ($FERRY_AGENT_<ARCH>, $FERRY_AGENT for this ferry's own arch).
#define BOOST_TEST_MODULE agent_builds
#include <boost/test/unit_test.hpp>

#include <cstdlib>

#include "helper/remote/agent_builds.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::remote;
namespace fs = std::filesystem;

BOOST_AUTO_TEST_CASE(uname_to_arch) {
  BOOST_TEST(agent_arch_of("Linux x86_64\n").value_or("") == "x86_64");
  BOOST_TEST(agent_arch_of("Linux aarch64").value_or("") == "aarch64");
  BOOST_TEST(agent_arch_of("Linux arm64").value_or("") == "aarch64");
  for (const char* other : {"Darwin arm64", "FreeBSD amd64", "Linux armv7l", "Linux i686", "Linux riscv64", "", "x86_64"})
    BOOST_TEST(!agent_arch_of(other).has_value(), other);
  BOOST_TEST(native_arch() == "x86_64");
}

BOOST_AUTO_TEST_CASE(refusal_names_the_box_and_what_runs) {
  BOOST_TEST(unsupported_box_message("ssh gpu1", "Darwin arm64\n") == "ssh gpu1 is Darwin arm64: ferry-agent runs on x86-64 and aarch64 Linux");
  BOOST_TEST(unsupported_box_message("ssh gpu1", "").find("uname -sm printed nothing") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(where_each_build_is_looked_for) {
  ferry::test::TempDir dir("agent-builds");
  const fs::path agent = dir / "some-agent";
  ferry::test::write_file(agent, "#!/bin/sh\n");
  fs::permissions(agent, fs::perms::owner_all);
  ::setenv("FERRY_AGENT_AARCH64", agent.c_str(), 1);
  BOOST_TEST(find_agent_for_arch("aarch64").value() == agent);
  ::setenv("FERRY_AGENT_AARCH64", (dir / "missing").c_str(), 1);
  auto missing = find_agent_for_arch("aarch64");
  BOOST_REQUIRE(!missing.has_value());
  BOOST_TEST(missing.error().find("$FERRY_AGENT_AARCH64=") != std::string::npos, missing.error());
  ::unsetenv("FERRY_AGENT_AARCH64");
  // Not beside this test binary: the message says where it looked and which variable to set.
  auto absent = find_agent_for_arch("aarch64");
  BOOST_REQUIRE(!absent.has_value());
  BOOST_TEST(absent.error().find("ferry-agent-aarch64") != std::string::npos, absent.error());
  BOOST_TEST(absent.error().find("$FERRY_AGENT_AARCH64") != std::string::npos, absent.error());
  // The native arch: $FERRY_AGENT_X86_64 first, then $FERRY_AGENT.
  ::setenv("FERRY_AGENT", agent.c_str(), 1);
  BOOST_TEST(find_agent_for_arch("x86_64").value() == agent);
  ::unsetenv("FERRY_AGENT");
}

BOOST_AUTO_TEST_CASE(build_marker_read_from_a_binary_s_bytes) {
  ferry::test::TempDir dir("agent-marker");
  using namespace std::string_literals;
  // The bare prefix (as ferry's own binary holds it) is passed over; the marker is the one with
  // "<version> <commit>" up to a NUL.
  ferry::test::write_file(dir / "agent", "\x7f" "ELF..FERRY-BUILD \0..FERRY-BUILD not a marker at all\0"
                                         "..FERRY-BUILD 0.2.0 1a2b3c4d5e6f\0tail"s);
  BOOST_TEST(read_build_marker(dir / "agent").value_or("none") == "0.2.0 1a2b3c4d5e6f");
  ferry::test::write_file(dir / "old", "\x7f" "ELF no marker here\0"s);
  BOOST_TEST(!read_build_marker(dir / "old").has_value());
  BOOST_TEST(!read_build_marker(dir / "missing").has_value());
}

BOOST_AUTO_TEST_CASE(agent_build_checks_name_what_is_wrong) {
  ferry::test::TempDir dir("agent-checks");
  // Nothing beside this test binary: the native agent missing fails, the other arch's warns.
  auto checks = check_agent_builds();
  BOOST_REQUIRE(checks.size() == 2u);
  BOOST_TEST(checks[0].arch == "x86_64");
  BOOST_TEST(checks[0].status == "fail");
  BOOST_TEST(checks[0].detail.find("libexec") != std::string::npos, checks[0].detail);
  BOOST_TEST(!checks[0].fix.empty());
  BOOST_TEST(checks[1].status == "warn");
  BOOST_TEST(checks[1].detail.find("aarch64 boxes cannot be used") != std::string::npos, checks[1].detail);
  // Agents named by the environment are the user's choice, whatever their build.
  const fs::path agent = dir / "agent";
  ferry::test::write_file(agent, "#!/bin/sh\n");
  fs::permissions(agent, fs::perms::owner_all);
  ::setenv("FERRY_AGENT", agent.c_str(), 1);
  ::setenv("FERRY_AGENT_AARCH64", agent.c_str(), 1);
  checks = check_agent_builds();
  BOOST_TEST(checks[0].status == "pass");
  BOOST_TEST(checks[0].detail.find("$FERRY_AGENT") != std::string::npos, checks[0].detail);
  BOOST_TEST(checks[1].status == "pass");
  BOOST_TEST(checks[1].detail.find("$FERRY_AGENT_AARCH64") != std::string::npos, checks[1].detail);
  ::unsetenv("FERRY_AGENT");
  ::unsetenv("FERRY_AGENT_AARCH64");
}
