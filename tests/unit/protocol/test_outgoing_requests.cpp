// OutgoingRequests: server -> client ids live in their own "srv-N" space, the client's response
// reaches the waiting call through the dispatcher's on_response hook, errors come back as sent,
// and deadlines, cancellation and detach all end a wait.
#define BOOST_TEST_MODULE outgoing_requests
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "protocol/dispatcher.hpp"
#include "protocol/messages.hpp"
#include "protocol/outgoing_requests.hpp"

using namespace ferry::protocol;
using namespace std::chrono_literals;

namespace {

// Captures what the server sends, and lets the test wait for the n-th message.
struct Wire {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<json> sent;
  void send(const json& m) {
    std::lock_guard lock(mutex);
    sent.push_back(m);
    cv.notify_all();
  }
  json wait_for(std::size_t index) {
    std::unique_lock lock(mutex);
    BOOST_REQUIRE(cv.wait_for(lock, 5s, [&] { return sent.size() > index; }));
    return sent[index];
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(response_is_routed_through_the_dispatcher_by_id) {
  Wire wire;
  OutgoingRequests out;
  out.attach([&](const json& m) { wire.send(m); });
  BindingTable table;
  DispatcherHooks hooks;
  hooks.send = [&](const json& m) { wire.send(m); };
  hooks.post = [](std::function<void()> t) { t(); };
  hooks.on_response = [&](const Response& r) { return out.route(r); };
  std::vector<std::string> logs;
  hooks.log = [&](LogLevel, const std::string& s) { logs.push_back(s); };
  Dispatcher d(table, std::move(hooks), DispatcherOptions{Encoding::json, false});

  std::expected<json, ResponseError> first, second;
  std::thread a([&] { first = out.call("host/confirmHostKey", {{"fingerprint", "SHA256:x"}}, 5s); });
  const json req1 = wire.wait_for(0);
  std::thread b([&] { second = out.call("host/passphrase", {{"keyFile", "/k"}}, 5s); });
  const json req2 = wire.wait_for(1);
  BOOST_TEST(req1["method"] == "host/confirmHostKey");
  BOOST_TEST(req1["id"].is_string());
  BOOST_TEST(req1["id"].get<std::string>().starts_with("srv-"));
  BOOST_TEST(req1["id"] != req2["id"]);

  // Answered out of order: each call gets its own response.
  d.handle_body(json{{"jsonrpc", "2.0"}, {"id", req2["id"]}, {"error", {{"code", -32800}, {"message", "user closed"}}}}.dump());
  d.handle_body(json{{"jsonrpc", "2.0"}, {"id", req1["id"]}, {"result", {{"accept", true}}}}.dump());
  a.join();
  b.join();
  BOOST_REQUIRE(first.has_value());
  BOOST_TEST((*first)["accept"] == true);
  BOOST_REQUIRE(!second.has_value());
  BOOST_TEST(second.error().message == "user closed");
  BOOST_TEST(out.waiting() == 0u);

  // A response to an id that is not ours is ignored (logged), and nothing is sent back.
  const auto before = wire.sent.size();
  d.handle_body(R"({"jsonrpc":"2.0","id":7,"result":1})");
  BOOST_TEST(wire.sent.size() == before);
  BOOST_TEST(!logs.empty());
}

BOOST_AUTO_TEST_CASE(deadline_cancellation_and_detach_end_a_wait) {
  OutgoingRequests out;
  auto refused = out.call("host/passphrase", json::object(), 1s);
  BOOST_REQUIRE(!refused.has_value());  // nothing attached: fails at once

  Wire wire;
  out.attach([&](const json& m) { wire.send(m); });
  const auto start = std::chrono::steady_clock::now();
  auto late = out.call("host/passphrase", json::object(), 100ms);
  BOOST_REQUIRE(!late.has_value());
  BOOST_TEST(late.error().message.find("did not answer") != std::string::npos);
  BOOST_TEST((std::chrono::steady_clock::now() - start < 5s));
  // The late answer is recognised as ours and dropped.
  BOOST_TEST(out.route(Response{wire.wait_for(0)["id"], json{{"passphrase", "x"}}}));

  CancellationSource cancel;
  std::expected<json, ResponseError> cancelled;
  std::thread t([&] { cancelled = out.call("host/passphrase", json::object(), 60s, cancel.token()); });
  wire.wait_for(1);
  cancel.cancel();
  t.join();
  BOOST_REQUIRE(!cancelled.has_value());
  BOOST_TEST(cancelled.error().code == error_code::kRequestCancelled);

  std::expected<json, ResponseError> dropped;
  std::thread u([&] { dropped = out.call("host/confirmHostKey", json::object(), 60s); });
  wire.wait_for(2);
  out.detach("the client closed the session");
  u.join();
  BOOST_REQUIRE(!dropped.has_value());
  BOOST_TEST(dropped.error().message.find("closed the session") != std::string::npos);
  BOOST_TEST(!out.notify("host/stateChanged", json::object()));
}
