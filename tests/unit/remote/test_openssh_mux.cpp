// The tunnel master's contract with ssh: its argv is the lane's (the link's host key only, no
// prompt, no config, no forwarding of its own) plus a ControlMaster on the given path that says
// when it listens; the mux messages ferry writes are byte-exact PROTOCOL.mux, and the master's
// replies are read whole, in pieces, with a refusal's reason, and a bogus packet is an error.
#define BOOST_TEST_MODULE openssh_mux
#include <algorithm>

#include <boost/test/unit_test.hpp>

#include "helper/remote/openssh_mux.hpp"
#include "tests/unit/remote/example_lane_spec.hpp"

using namespace ferry::remote;

namespace {

OpenSshLaneSpec spec() { return ferry::test::example_lane_spec(); }

bool has(const std::vector<std::string>& argv, const std::string& item) { return std::find(argv.begin(), argv.end(), item) != argv.end(); }

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_master_is_a_lane_that_listens_on_a_private_socket_and_runs_nothing) {
  auto argv = openssh_mux_argv(spec(), "ssh-ed25519", "/tmp/ferry-lane-x/mux");
  for (const char* o : {"BatchMode=yes", "StrictHostKeyChecking=yes", "UserKnownHostsFile=/tmp/ferry-lane-x/known_hosts",
                        "GlobalKnownHostsFile=none", "HostKeyAlgorithms=ssh-ed25519", "PasswordAuthentication=no",
                        "ClearAllForwardings=yes", "ControlMaster=yes", "ControlPath=/tmp/ferry-lane-x/mux", "ControlPersist=no",
                        "PermitLocalCommand=yes", "LocalCommand=echo ferry-mux-ready"})
    BOOST_TEST(has(argv, o), o);
  BOOST_TEST(argv[1] == "-F");
  BOOST_TEST(argv[2] == "none");
  BOOST_TEST(has(argv, "-N"));  // no remote command
  BOOST_TEST(has(argv, "-n"));  // stdin is not read
  BOOST_TEST(argv.back() == "10.0.0.7");
  BOOST_TEST(argv[argv.size() - 2] == "--");
  BOOST_TEST(!has(argv, "ControlMaster=no"));
}

BOOST_AUTO_TEST_CASE(hello_and_stdio_forward_are_the_documented_bytes) {
  BOOST_TEST(mux::hello_packet() == bytes({0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 4}));
  // length, MUX_C_NEW_STDIO_FWD, request id 7, reserved "", "127.0.0.1", port 8888 (a uint32, as
  // ssh's own mux client sends it).
  std::string want = bytes({0, 0, 0, 29, 0x10, 0, 0, 8, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 9}) + "127.0.0.1" + bytes({0, 0, 0x22, 0xb8});
  BOOST_TEST(mux::stdio_forward_packet(7, "127.0.0.1", 8888) == want);
}

BOOST_AUTO_TEST_CASE(replies_are_read_whole_even_when_they_arrive_in_pieces) {
  const std::string hello = bytes({0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 4});
  const std::string opened = bytes({0, 0, 0, 12, 0x80, 0, 0, 6, 0, 0, 0, 7, 0, 0, 0, 2});
  std::string buffer;
  for (char c : hello + opened) {  // one byte at a time: nothing is parsed from half a packet
    buffer.push_back(c);
    auto m = mux::take_message(buffer);
    BOOST_REQUIRE(m.has_value());
    if (!*m) continue;
    if ((*m)->type == mux::kHello) BOOST_TEST((*m)->id == mux::kVersion);
    else {
      BOOST_TEST((*m)->type == mux::kSessionOpened);
      BOOST_TEST((*m)->id == 7u);
    }
  }
  BOOST_TEST(buffer.empty());

  buffer = bytes({0, 0, 0, 18, 0x80, 0, 0, 3, 0, 0, 0, 7, 0, 0, 0, 6}) + "no way";
  auto refused = mux::take_message(buffer);
  BOOST_REQUIRE(refused.has_value());
  BOOST_REQUIRE(refused->has_value());
  BOOST_TEST((*refused)->type == mux::kFailure);
  BOOST_TEST((*refused)->reason == "no way");
}

BOOST_AUTO_TEST_CASE(a_packet_no_master_sends_is_an_error) {
  std::string huge = bytes({0, 0x10, 0, 0, 0x80});  // 1 MiB announced
  BOOST_TEST(!mux::take_message(huge).has_value());
  std::string short_body = bytes({0, 0, 0, 2, 0x80, 0});
  BOOST_TEST(!mux::take_message(short_body).has_value());
}
