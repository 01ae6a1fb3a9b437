// RunFollower and RunClient's routing: exact resume across re-attaches and reconnects, with an
// in-process endpoint that records calls (the agent's side is tested in tests/unit/agent and
// over real sshd in tests/integration/test_run_ssh.cpp).
#define BOOST_TEST_MODULE run_follower
#include <boost/test/unit_test.hpp>

#include <poll.h>

#include <functional>
#include <mutex>

#include "helper/run/run_follower.hpp"

using namespace ferry::run;
using ferry::protocol::ResponseError;
namespace ec = ferry::protocol::error_code;

namespace {

class RecordingEndpoint final : public ferry::remote::Endpoint {
 public:
  std::function<std::expected<json, ResponseError>(std::string_view, const json&)> reply =
      [](std::string_view, const json&) -> std::expected<json, ResponseError> { return json::object(); };
  std::vector<std::pair<std::string, json>> calls;

  std::expected<ferry::remote::AgentInfo, ResponseError> connect(std::chrono::milliseconds) override { return info_; }
  std::expected<json, ResponseError> call(std::string_view method, json params, std::chrono::milliseconds) override {
    calls.emplace_back(std::string(method), params);
    return reply(method, params);
  }
  std::expected<void, ResponseError> notify(std::string_view, json) override { return {}; }
  const ferry::remote::AgentInfo& info() const override { return info_; }
  bool connected() const override { return true; }
  void close() override {}
  std::string description() const override { return "recording"; }

  // What the agent's reader thread would do.
  void deliver(const std::string& method, json params) {
    fanout_handler()({method, std::move(params)});
  }
  bool has_handler() const { return subscriber_count() > 0; }

 private:
  ferry::remote::AgentInfo info_;
};

json output(std::uint64_t offset, int stream, std::string_view bytes, const std::string& id = "r1") {
  return json{{"id", id}, {"offset", offset}, {"stream", stream},
              {"data", json::binary(std::vector<std::uint8_t>(bytes.begin(), bytes.end()))}};
}

bool readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

struct Collected {
  std::mutex mutex;
  std::string out, err;
  void add(const OutputRecord& r) {
    std::lock_guard lock(mutex);
    (r.stream == Stream::stdout_stream ? out : err) += r.data;
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(resumes_after_a_reconnect_without_loss_or_doubling) {
  RecordingEndpoint ep;
  RunClient client(ep);
  Collected got;
  RunFollower f(client, "r1", 0, [&](const OutputRecord& r) { got.add(r); });
  BOOST_TEST(f.needs_attach());
  BOOST_REQUIRE(f.attach().has_value());
  BOOST_TEST(ep.calls.back().first == "run/attach");
  BOOST_TEST(ep.calls.back().second["offset"] == 0);
  BOOST_TEST(!f.needs_attach());

  ep.deliver("run/output", output(0, 1, "one\n"));   // next 9
  ep.deliver("run/output", output(9, 2, "warn\n"));  // next 19
  ep.deliver("run/output", output(0, 1, "one\n"));   // a repeat: dropped
  ep.deliver("run/output", output(0, 1, "other run", "r2"));  // not ours
  f.link_lost();
  BOOST_TEST(f.link_down());
  f.drain();
  f.link_restored();
  BOOST_TEST(readable(f.wake_fd()));
  BOOST_TEST(f.needs_attach());
  BOOST_REQUIRE(f.attach().has_value());
  BOOST_TEST(ep.calls.back().second["offset"] == 19);
  ep.deliver("run/output", output(19, 1, "two\n"));  // next 28
  BOOST_TEST(!f.finished());
  ep.deliver("run/exited", json{{"id", "r1"}, {"exitCode", 0}, {"logBytes", 28}});
  BOOST_TEST(f.finished());
  BOOST_TEST((f.wait(std::chrono::steady_clock::now()) == RunFollower::Event::finished));
  BOOST_TEST(got.out == "one\ntwo\n");
  BOOST_TEST(got.err == "warn\n");
  BOOST_TEST(f.delivered_bytes() == 13u);
  BOOST_TEST(exit_status(*f.exit()) == 0);
}

BOOST_AUTO_TEST_CASE(an_exit_before_all_output_asks_for_the_rest) {
  RecordingEndpoint ep;
  RunClient client(ep);
  Collected got;
  RunFollower f(client, "r1", 0, [&](const OutputRecord& r) { got.add(r); });
  BOOST_REQUIRE(f.attach().has_value());
  ep.deliver("run/output", output(0, 1, "a"));           // next 6
  ep.deliver("run/output", output(12, 1, "c"));          // gap: 6..12 missing
  BOOST_TEST(f.needs_attach());
  ep.deliver("run/exited", json{{"id", "r1"}, {"signal", 15}, {"logBytes", 18}});
  BOOST_TEST(!f.finished());
  BOOST_TEST((f.wait(std::chrono::steady_clock::now()) == RunFollower::Event::needs_attach));
  BOOST_REQUIRE(f.attach().has_value());
  BOOST_TEST(ep.calls.back().second["offset"] == 6);
  ep.deliver("run/output", output(6, 1, "b"));
  ep.deliver("run/output", output(12, 1, "c"));
  BOOST_TEST(f.finished());
  BOOST_TEST(got.out == "abc");
  BOOST_TEST(exit_status(*f.exit()) == 128 + 15);
}

BOOST_AUTO_TEST_CASE(an_attach_on_a_dead_link_waits_for_the_new_one) {
  RecordingEndpoint ep;
  ep.reply = [](std::string_view, const json&) -> std::expected<json, ResponseError> {
    return std::unexpected(ResponseError{ec::kAgentUnavailable, "link down", {}});
  };
  RunClient client(ep);
  RunFollower f(client, "r1", 0, {});
  BOOST_TEST(!f.attach().has_value());
  BOOST_TEST(!f.needs_attach());  // nothing to do until the link is back
  BOOST_TEST(f.link_down());
  BOOST_TEST(!f.failed().has_value());
  BOOST_TEST((f.wait(std::chrono::steady_clock::now() + std::chrono::milliseconds(1)) == RunFollower::Event::timeout));
  f.link_restored();
  BOOST_TEST(f.needs_attach());
}

BOOST_AUTO_TEST_CASE(an_unknown_run_fails_the_follower) {
  RecordingEndpoint ep;
  ep.reply = [](std::string_view, const json&) -> std::expected<json, ResponseError> {
    return std::unexpected(ResponseError{ec::kInvalidParams, "no run 20990101-000000-beef", {}});
  };
  RunClient client(ep);
  RunFollower f(client, "20990101-000000-beef", 0, {});
  auto r = f.attach();
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(is_unknown_run(r.error()));
  BOOST_TEST(f.failed().value() == "no run 20990101-000000-beef");
  BOOST_TEST((f.wait(std::chrono::steady_clock::now()) == RunFollower::Event::failed));
}

BOOST_AUTO_TEST_CASE(client_calls_carry_the_contract_shapes) {
  RecordingEndpoint ep;
  ep.reply = [](std::string_view method, const json&) -> std::expected<json, ResponseError> {
    if (method == "run/start") return json{{"id", "20261130-020000-abcd"}, {"pid", 4242}, {"startedAt", "t"}};
    if (method == "run/list")
      return json{{"runs", json::array({json{{"id", "a"}, {"argv", {"python3", "x.py"}}, {"state", "exited"}, {"exitCode", 1}, {"logBytes", 7}}})}};
    if (method == "run/read") return json{{"records", json::array({output(0, 2, "e")})}, {"next", 6}, {"state", "exited"}};
    return json::object();
  };
  RunClient client(ep);
  RunSpec spec;
  spec.argv = {"python3", "x.py"};
  auto started = client.start(spec);
  BOOST_REQUIRE(started.has_value());
  BOOST_TEST(started->id == "20261130-020000-abcd");
  BOOST_TEST(started->pid == 4242);
  BOOST_TEST(ep.calls.back().second["argv"][1] == "x.py");
  BOOST_REQUIRE(client.input("a", std::string("\0x", 2), true).has_value());
  BOOST_TEST(ep.calls.back().second["data"].is_binary());
  BOOST_TEST(ep.calls.back().second["data"].get_binary().size() == 2u);
  BOOST_TEST(ep.calls.back().second["eof"] == true);
  BOOST_REQUIRE(client.signal("a", "9").has_value());
  BOOST_TEST(ep.calls.back().second["signal"] == 9);
  BOOST_REQUIRE(client.signal("a", "INT").has_value());
  BOOST_TEST(ep.calls.back().second["signal"] == "INT");
  auto runs = client.list(true);
  BOOST_REQUIRE(runs.has_value());
  BOOST_TEST(ep.calls.back().second["all"] == true);
  BOOST_TEST(runs->front().exit_code.value() == 1);
  BOOST_TEST(runs->front().argv.size() == 2u);
  auto read = client.read("a", 0);
  BOOST_REQUIRE(read.has_value());
  BOOST_TEST(read->records.front().data == "e");
  BOOST_TEST(read->next == 6u);
}

BOOST_AUTO_TEST_CASE(other_notifications_pass_through_and_the_handler_goes_with_the_client) {
  RecordingEndpoint ep;
  int others = 0;
  {
    RunClient client(ep, [&](const ferry::protocol::Notification& n) { others += n.method == "sync/progress"; });
    ep.deliver("sync/progress", json::object());
    ep.deliver("run/output", json{{"garbage", true}});  // malformed: logged and dropped
    BOOST_TEST(others == 1);
  }
  BOOST_TEST(!ep.has_handler());
}

// start() with `attach`: the new run's records that come before anyone follows it (here: during the
// call, as the reader thread can deliver them before the caller has the id) are held, and the
// follower that adopts the stream gets them first, then what came after, each once, with no
// run/attach. Another run's records are not kept; a reply without `attached` holds nothing.
BOOST_AUTO_TEST_CASE(a_start_that_attaches_holds_the_early_records_for_its_follower) {
  RecordingEndpoint ep;
  ep.reply = [&](std::string_view method, const json&) -> std::expected<json, ResponseError> {
    if (method != "run/start") return json::object();
    ep.deliver("run/output", output(0, 1, "a", "r7"));        // next 6
    ep.deliver("run/output", output(0, 1, "other", "r8"));    // not ours
    ep.deliver("run/port", json{{"id", "r7"}, {"port", 8888}, {"address", "127.0.0.1"}, {"open", true}});
    return json{{"id", "r7"}, {"pid", 1}, {"startedAt", "t"}, {"attached", {{"offset", 0}, {"state", "running"}}}};
  };
  RunClient client(ep);
  RunSpec spec;
  spec.argv = {"true"};
  auto started = client.start(spec, /*ports=*/true);
  BOOST_REQUIRE(started.has_value());
  BOOST_REQUIRE(started->attached.has_value());
  BOOST_TEST(started->attached->state == "running");
  BOOST_TEST(ep.calls.back().second["attach"]["ports"] == true);

  Collected got;
  std::vector<int> ports;
  RunFollower f(client, "r7", 0, [&](const OutputRecord& r) { got.add(r); });
  f.watch_ports([&](const PortEvent& e) { ports.push_back(e.port); });
  ep.deliver("run/output", output(6, 2, "b", "r7"));  // after the follower, before it adopts: waits its turn
  BOOST_TEST(got.out.empty());
  f.adopt_start_attach(/*stream_live=*/true);
  BOOST_TEST(got.out == "a");
  BOOST_TEST(got.err == "b");
  BOOST_TEST(ports == std::vector<int>{8888});
  BOOST_TEST(!f.needs_attach());
  ep.deliver("run/exited", json{{"id", "r7"}, {"exitCode", 0}, {"logBytes", 12}});
  BOOST_TEST(f.finished());
  for (const auto& c : ep.calls) BOOST_TEST(c.first != "run/attach");

  Collected other;
  RunFollower g(client, "r8", 0, [&](const OutputRecord& r) { other.add(r); });
  client.claim("r8", &g);
  BOOST_TEST(other.out.empty());  // dropped once the start was answered

  // The stream did not survive (the link dropped since): the held records still come, and the
  // follower attaches at the next offset.
  ep.reply = [&](std::string_view method, const json&) -> std::expected<json, ResponseError> {
    if (method != "run/start") return json::object();
    ep.deliver("run/output", output(0, 1, "x", "r9"));
    return json{{"id", "r9"}, {"pid", 1}, {"startedAt", "t"}, {"attached", {{"offset", 0}, {"state", "running"}}}};
  };
  BOOST_REQUIRE(client.start(spec, false).has_value());
  BOOST_TEST(ep.calls.back().second["attach"] == json::object());
  Collected late;
  RunFollower h(client, "r9", 0, [&](const OutputRecord& r) { late.add(r); });
  h.adopt_start_attach(/*stream_live=*/false);
  BOOST_TEST(late.out == "x");
  BOOST_TEST(h.needs_attach());
  BOOST_REQUIRE(h.attach().has_value());
  BOOST_TEST(ep.calls.back().second["offset"] == 6);

  // An agent that did not attach: nothing is held for the id.
  ep.reply = [](std::string_view method, const json&) -> std::expected<json, ResponseError> {
    if (method == "run/start") return json{{"id", "r10"}, {"pid", 1}, {"startedAt", "t"}};
    return json::object();
  };
  auto plain = client.start(spec, false);
  BOOST_REQUIRE(plain.has_value());
  BOOST_TEST(!plain->attached.has_value());
  ep.deliver("run/output", output(0, 1, "y", "r10"));
  Collected none;
  RunFollower k(client, "r10", 0, [&](const OutputRecord& r) { none.add(r); });
  client.claim("r10", &k);
  BOOST_TEST(none.out.empty());
  BOOST_TEST(k.needs_attach());
}
