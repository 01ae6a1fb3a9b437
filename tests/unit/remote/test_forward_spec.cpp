// Tunnel specs as ssh spells them: the grammar, the loopback-only rule with its explanation, port
// ranges, ferry.json tunnels, tunnel/open params, and the one-line description `ferry tunnel` prints.
#define BOOST_TEST_MODULE forward_spec
#include <boost/test/unit_test.hpp>

#include "helper/remote/forward_spec.hpp"

using namespace ferry::remote;
using ferry::protocol::json;

BOOST_AUTO_TEST_CASE(port_alone_forwards_the_same_port_on_remote_localhost) {
  auto s = parse_forward_spec("8888", ForwardKind::kLocal);
  BOOST_REQUIRE(s.has_value());
  BOOST_TEST(s->bind_address == "127.0.0.1");
  BOOST_TEST(s->local_port == 8888);
  BOOST_TEST(s->remote_host == "localhost");
  BOOST_TEST(s->remote_port == 8888);
}

BOOST_AUTO_TEST_CASE(three_and_four_fields) {
  auto s = parse_forward_spec("9000:localhost:8888", ForwardKind::kLocal);
  BOOST_REQUIRE(s.has_value());
  BOOST_TEST(s->local_port == 9000);
  BOOST_TEST(s->remote_host == "localhost");
  BOOST_TEST(s->remote_port == 8888);
  auto four = parse_forward_spec("localhost:0:10.0.0.5:6006", ForwardKind::kLocal);
  BOOST_REQUIRE(four.has_value());
  BOOST_TEST(four->bind_address == "localhost");
  BOOST_TEST(four->local_port == 0);  // ephemeral
  BOOST_TEST(four->remote_host == "10.0.0.5");
  auto v6 = parse_forward_spec("[::1]:9000:[::1]:8888", ForwardKind::kLocal);
  BOOST_REQUIRE(v6.has_value());
  BOOST_TEST(v6->bind_address == "::1");
  BOOST_TEST(v6->remote_host == "::1");
}

BOOST_AUTO_TEST_CASE(non_loopback_bind_addresses_are_refused_with_the_reason) {
  for (const char* text : {"0.0.0.0:9000:localhost:8888", "*:9000:localhost:8888", "192.168.1.20:9000:localhost:8888",
                           ":9000:localhost:8888"}) {
    auto s = parse_forward_spec(text, ForwardKind::kLocal);
    BOOST_REQUIRE_MESSAGE(!s.has_value(), text);
    BOOST_TEST(s.error().find("ferry binds tunnels to loopback only: anyone on your network could reach") == 0u, s.error());
    BOOST_TEST(s.error().find("use 127.0.0.1") != std::string::npos);
  }
  auto r = parse_forward_spec("0.0.0.0:5678:localhost:5678", ForwardKind::kReverse);
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().find("loopback only") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(malformed_specs_say_what_was_expected) {
  for (const char* text : {"", "abc", "9000:8888", "70000", "-1", "9000:localhost:0", "9000::8888", "0", "1:2:3:4:5", "[::1"}) {
    auto s = parse_forward_spec(text, ForwardKind::kLocal);
    BOOST_TEST(!s.has_value(), "'" << text << "' was accepted");
  }
  BOOST_TEST(parse_forward_spec("9000:8888", ForwardKind::kLocal).error().find("PORT, LPORT:HOST:RPORT") != std::string::npos);
  BOOST_TEST(parse_forward_spec("70000", ForwardKind::kLocal).error().find("not a port number") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(reverse_specs_put_the_remote_port_first) {
  auto s = parse_forward_spec("5678", ForwardKind::kReverse);
  BOOST_REQUIRE(s.has_value());
  BOOST_TEST(s->remote_port == 5678);
  BOOST_TEST(s->local_port == 5678);
  BOOST_TEST(s->local_host == "127.0.0.1");
  auto t = parse_forward_spec("6000:localhost:5678", ForwardKind::kReverse);
  BOOST_REQUIRE(t.has_value());
  BOOST_TEST(t->remote_port == 6000);
  BOOST_TEST(t->local_host == "localhost");
  BOOST_TEST(t->local_port == 5678);
}

BOOST_AUTO_TEST_CASE(descriptions_name_both_ends) {
  ForwardInfo local{1, *parse_forward_spec("9000:localhost:8888", ForwardKind::kLocal), 9000, ferry::protocol::ForwardState::active, "", 0, 0};
  BOOST_TEST(describe(local) == "127.0.0.1:9000 → remote localhost:8888");
  ForwardInfo ephemeral{2, *parse_forward_spec("0:localhost:8888", ForwardKind::kLocal), 41234, ferry::protocol::ForwardState::active, "", 0, 0};
  BOOST_TEST(describe(ephemeral) == "127.0.0.1:41234 → remote localhost:8888");
  ForwardInfo reverse{3, *parse_forward_spec("5678", ForwardKind::kReverse), 5678, ferry::protocol::ForwardState::active, "", 0, 0};
  BOOST_TEST(describe(reverse) == "remote 127.0.0.1:5678 → 127.0.0.1:5678 here");
  auto j = to_json(ephemeral);
  BOOST_TEST(j["localPort"] == 41234);
  BOOST_TEST(j["remotePort"] == 8888);
  BOOST_TEST(j["kind"] == "local");
}

BOOST_AUTO_TEST_CASE(ferry_json_tunnels_and_rpc_params) {
  ferry::deploy::TunnelSpec t;
  t.name = "pycharm";
  t.kind = "reverse";
  t.remote_port = 5678;
  t.local_port = 5679;
  auto s = forward_spec_from(t);
  BOOST_TEST((s.kind == ForwardKind::kReverse));
  BOOST_TEST(s.remote_port == 5678);
  BOOST_TEST(s.local_port == 5679);
  BOOST_TEST(s.name == "pycharm");

  auto p = forward_spec_from_json(json{{"remotePort", 8888}, {"localPort", 0}});
  BOOST_REQUIRE(p.has_value());
  BOOST_TEST(p->local_port == 0);
  BOOST_TEST(p->remote_host == "localhost");
  auto same = forward_spec_from_json(json{{"remotePort", 8888}});
  BOOST_REQUIRE(same.has_value());
  BOOST_TEST(same->local_port == 8888);
  BOOST_TEST(!forward_spec_from_json(json{{"localPort", 1}}).has_value());
  BOOST_TEST(!forward_spec_from_json(json{{"remotePort", 8888}, {"bindAddress", "0.0.0.0"}}).has_value());
  BOOST_TEST(!forward_spec_from_json(json{{"remotePort", "8888"}}).has_value());
  BOOST_TEST(!forward_spec_from_json(json{{"remotePort", 8888}, {"kind", "sideways"}}).has_value());
}

BOOST_AUTO_TEST_CASE(a_spec_survives_its_json) {
  for (auto text : {"9000:localhost:8888", "0:10.0.0.5:22", "[::1]:7000:db:5432"}) {
    auto spec = parse_forward_spec(text, ForwardKind::kLocal);
    BOOST_REQUIRE(spec.has_value());
    spec->name = "n";
    auto back = forward_spec_from_json(forward_spec_json(*spec));
    BOOST_REQUIRE_MESSAGE(back.has_value(), (back ? std::string() : back.error()));
    BOOST_TEST(back->bind_address == spec->bind_address);
    BOOST_TEST(back->local_port == spec->local_port);
    BOOST_TEST(back->remote_host == spec->remote_host);
    BOOST_TEST(back->remote_port == spec->remote_port);
    BOOST_TEST(back->name == "n");
    BOOST_TEST((back->kind == ForwardKind::kLocal));
  }
  auto reverse = parse_forward_spec("5678:127.0.0.1:5679", ForwardKind::kReverse);
  BOOST_REQUIRE(reverse.has_value());
  auto back = forward_spec_from_json(forward_spec_json(*reverse));
  BOOST_REQUIRE(back.has_value());
  BOOST_TEST((back->kind == ForwardKind::kReverse));
  BOOST_TEST(back->remote_port == reverse->remote_port);
  BOOST_TEST(back->local_port == reverse->local_port);
  BOOST_TEST(back->local_host == reverse->local_host);
}
