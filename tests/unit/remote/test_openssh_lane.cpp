// The OpenSSH lane's contract with ssh: the argv checks only the link's host key (one known_hosts
// line under the alias, StrictHostKeyChecking, the key's own algorithms), never prompts, reads no
// config, authenticates as the link does, and puts the command after "--" and the host; hosts
// behind proxies are refused; the known_hosts file is private and goes with its owner;
// FERRY_OPENSSH picks or disables the client; the lane plan gives a short link one lane by default.
#define BOOST_TEST_MODULE openssh_lane
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <boost/test/unit_test.hpp>

#include "helper/remote/openssh_lane.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "tests/unit/remote/example_lane_spec.hpp"

using namespace ferry;
namespace fs = std::filesystem;

namespace {

remote::OpenSshLaneSpec spec() { return ferry::test::example_lane_spec(); }

bool has(const std::vector<std::string>& argv, const std::string& option) {
  return std::find(argv.begin(), argv.end(), option) != argv.end();
}

std::size_t index_of(const std::vector<std::string>& argv, const std::string& item) {
  return static_cast<std::size_t>(std::find(argv.begin(), argv.end(), item) - argv.begin());
}

}  // namespace

BOOST_AUTO_TEST_CASE(argv_checks_the_links_key_and_never_prompts) {
  const auto argv = remote::openssh_lane_argv(spec(), "ssh-ed25519", "exec agent --root '~/p'");
  BOOST_TEST(argv.front() == "/usr/bin/ssh");
  BOOST_TEST(argv[1] == "-F");
  BOOST_TEST(argv[2] == "none");
  for (const char* o : {"BatchMode=yes", "StrictHostKeyChecking=yes", "UpdateHostKeys=no", "HostKeyAlias=ferry-lane",
                        "UserKnownHostsFile=/tmp/ferry-lane-x/known_hosts", "GlobalKnownHostsFile=none",
                        "HostKeyAlgorithms=ssh-ed25519", "PasswordAuthentication=no", "KbdInteractiveAuthentication=no",
                        "ControlMaster=no", "ClearAllForwardings=yes", "PermitLocalCommand=no", "LogLevel=QUIET"})
    BOOST_TEST(has(argv, o), "missing -o " << o);
  BOOST_TEST(has(argv, "-T"));
  BOOST_TEST(argv[index_of(argv, "-p") + 1] == "2222");
  BOOST_TEST(argv[index_of(argv, "-l") + 1] == "ml");
  // The host and the command come after "--": a host name can never be read as an option.
  const std::size_t dashes = index_of(argv, "--");
  BOOST_REQUIRE(dashes + 3 == argv.size());
  BOOST_TEST(argv[dashes + 1] == "10.0.0.7");
  BOOST_TEST(argv[dashes + 2] == "exec agent --root '~/p'");
  // No agent socket set: ssh's own default ($SSH_AUTH_SOCK), no identity files named.
  BOOST_TEST(std::none_of(argv.begin(), argv.end(), [](const std::string& a) { return a.starts_with("IdentityAgent="); }));
  BOOST_TEST(std::none_of(argv.begin(), argv.end(), [](const std::string& a) { return a.starts_with("IdentityFile="); }));
}

BOOST_AUTO_TEST_CASE(argv_authenticates_as_the_link_does) {
  auto s = spec();
  s.host.identity_files = {"/home/ml/.ssh/gpu_ed25519"};
  s.host.identity_files_explicit = true;
  s.host.identities_only = true;
  s.agent_socket = "";
  const auto argv = remote::openssh_lane_argv(s, "ssh-ed25519", "true");
  BOOST_TEST(has(argv, "IdentityFile=/home/ml/.ssh/gpu_ed25519"));
  BOOST_TEST(has(argv, "IdentitiesOnly=yes"));
  BOOST_TEST(has(argv, "IdentityAgent=none"));  // the link was told not to use an agent
  s.agent_socket = "/run/agent.sock";
  BOOST_TEST(has(remote::openssh_lane_argv(s, "ssh-ed25519", "true"), "IdentityAgent=/run/agent.sock"));
}

BOOST_AUTO_TEST_CASE(rsa_keys_are_asked_for_under_their_sha2_algorithms) {
  BOOST_TEST(remote::host_key_algorithms_for("ssh-rsa") == "rsa-sha2-512,rsa-sha2-256,ssh-rsa");
  BOOST_TEST(remote::host_key_algorithms_for("ecdsa-sha2-nistp256") == "ecdsa-sha2-nistp256");
}

BOOST_AUTO_TEST_CASE(hosts_behind_proxies_or_with_option_like_names_are_refused) {
  auto s = spec();
  BOOST_TEST(remote::openssh_lane_unsupported(s.host) == "");
  s.host.proxy_command = "nc %h %p";
  BOOST_TEST(remote::openssh_lane_unsupported(s.host) != "");
  s = spec();
  s.host.proxy_jump.push_back(spec().host);
  BOOST_TEST(remote::openssh_lane_unsupported(s.host) != "");
  s = spec();
  s.host.hostname = "-oProxyCommand=x";
  BOOST_TEST(remote::openssh_lane_unsupported(s.host) != "");
}

BOOST_AUTO_TEST_CASE(the_known_hosts_file_holds_one_private_line_and_goes_with_its_owner) {
  ssh::PublicKey key{"ssh-ed25519", std::vector<std::uint8_t>(51, 7)};
  fs::path file;
  {
    auto kh = remote::LaneKnownHosts::create(key);
    BOOST_REQUIRE(kh);
    file = kh->file();
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    BOOST_TEST(text.str() == "ferry-lane ssh-ed25519 " + ssh::base64_encode(key.blob) + "\n");
    struct stat st {};
    BOOST_REQUIRE(::stat(file.parent_path().c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 0777) == 0700u);
    BOOST_REQUIRE(::stat(file.c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 0077) == 0u);
  }
  BOOST_TEST(!fs::exists(file.parent_path()));
}

BOOST_AUTO_TEST_CASE(ferry_openssh_picks_or_disables_the_client) {
  ::setenv("FERRY_OPENSSH", "none", 1);
  BOOST_TEST(!remote::find_openssh_client());
  ::setenv("FERRY_OPENSSH", "/bin/true", 1);
  BOOST_TEST(remote::find_openssh_client().value_or("") == fs::path("/bin/true"));
  ::setenv("FERRY_OPENSSH", "/nonexistent/ssh", 1);
  BOOST_TEST(!remote::find_openssh_client());
  ::setenv("PATH", "/nonexistent", 1);
  ::unsetenv("FERRY_OPENSSH");
  BOOST_TEST(!remote::find_openssh_client());
}

// The lane plan: a short link (CPU the cap) gets kAutoOpenSshLanes OpenSSH lanes when a client
// can be used and none otherwise; a long one window lanes by its round trip; asking wins.
BOOST_AUTO_TEST_CASE(a_short_link_gets_one_openssh_lane_by_default_and_a_long_one_window_lanes) {
  using namespace std::chrono_literals;
  using remote::plan_lanes;
  const auto auto_lanes = static_cast<std::size_t>(remote::kAutoOpenSshLanes);
  BOOST_TEST(auto_lanes == 1u);
  auto short_link = plan_lanes(1ms, std::nullopt, std::nullopt, auto_lanes);
  BOOST_TEST(short_link.lanes == 1u);
  BOOST_TEST(short_link.openssh);
  BOOST_TEST(plan_lanes(1ms, std::nullopt, std::nullopt, 0).lanes == 0u);  // no client, or behind ProxyJump
  auto asked_none = plan_lanes(1ms, std::nullopt, std::size_t{0}, 0);
  BOOST_TEST(asked_none.lanes == 0u);
  auto long_link = plan_lanes(50ms, std::nullopt, std::nullopt, auto_lanes);
  BOOST_TEST(long_link.lanes == 8u);
  BOOST_TEST(!long_link.openssh);
  BOOST_TEST(plan_lanes(150ms, std::nullopt, std::nullopt, auto_lanes).lanes == 16u);
  auto asked_openssh = plan_lanes(50ms, std::nullopt, std::size_t{2}, 2);
  BOOST_TEST(asked_openssh.lanes == 2u);
  BOOST_TEST(asked_openssh.openssh);
  auto asked_bulk = plan_lanes(1ms, std::size_t{3}, std::size_t{2}, 2);
  BOOST_TEST(asked_bulk.lanes == 3u);
  BOOST_TEST(!asked_bulk.openssh);
}
