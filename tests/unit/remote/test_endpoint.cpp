// The Endpoint's notification fan-out: every subscriber gets every notification, in order, until
// its Subscription goes; a subscription may outlive its endpoint; remove() waits out a delivery.
// And call_error: a call's timeout reaches engines as a lost agent, other codes as their kind.
#define BOOST_TEST_MODULE endpoint
#include <boost/test/unit_test.hpp>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "helper/remote/endpoint.hpp"

using ferry::protocol::Notification;
using ferry::remote::NotificationFanout;
using ferry::remote::Subscription;

namespace {

// An endpoint with nothing behind it, whose "reader thread" is the test.
class QuietEndpoint final : public ferry::remote::Endpoint {
 public:
  std::expected<ferry::remote::AgentInfo, ferry::remote::ResponseError> connect(std::chrono::milliseconds) override {
    return info_;
  }
  std::expected<ferry::remote::json, ferry::remote::ResponseError> call(std::string_view, ferry::remote::json,
                                                                      std::chrono::milliseconds) override {
    return ferry::remote::json::object();
  }
  std::expected<void, ferry::remote::ResponseError> notify(std::string_view, ferry::remote::json) override { return {}; }
  const ferry::remote::AgentInfo& info() const override { return info_; }
  bool connected() const override { return true; }
  void close() override {}
  std::string description() const override { return "quiet"; }
  void deliver(const std::string& method) { fanout_handler()(Notification{method, ferry::remote::json::object()}); }
  std::size_t subscribers() const { return subscriber_count(); }

 private:
  ferry::remote::AgentInfo info_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(every_subscriber_gets_every_notification_until_it_goes) {
  QuietEndpoint ep;
  std::vector<std::string> a, b;
  auto sa = ep.subscribe([&](const Notification& n) { a.push_back(n.method); });
  {
    auto sb = ep.subscribe([&](const Notification& n) { b.push_back(n.method); });
    BOOST_TEST(ep.subscribers() == 2u);
    ep.deliver("run/output");
    ep.deliver("run/exited");
  }
  BOOST_TEST(ep.subscribers() == 1u);
  ep.deliver("sync/progress");
  BOOST_TEST(a == (std::vector<std::string>{"run/output", "run/exited", "sync/progress"}));
  BOOST_TEST(b == (std::vector<std::string>{"run/output", "run/exited"}));
}

BOOST_AUTO_TEST_CASE(a_moved_subscription_unsubscribes_once_and_may_outlive_its_endpoint) {
  Subscription kept;
  int calls = 0;
  {
    QuietEndpoint ep;
    auto s = ep.subscribe([&](const Notification&) { ++calls; });
    kept = std::move(s);
    BOOST_TEST(ep.subscribers() == 1u);
    ep.deliver("x");
    Subscription other = ep.subscribe([&](const Notification&) { calls += 10; });
    other = std::move(kept);  // drops the +10 handler, takes over the first
    BOOST_TEST(ep.subscribers() == 1u);
    ep.deliver("y");
    kept = std::move(other);
  }
  BOOST_TEST(calls == 2);
  kept.reset();  // the endpoint is gone: nothing to do, nothing to crash on
}

BOOST_AUTO_TEST_CASE(remove_returns_only_after_a_delivery_in_progress_has_finished) {
  NotificationFanout fanout;
  std::mutex m;
  std::condition_variable cv;
  bool entered = false, release = false, finished = false;
  auto id = fanout.add([&](const Notification&) {
    std::unique_lock lock(m);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    finished = true;
  });
  std::thread reader([&] { fanout.deliver(Notification{"run/output", {}}); });
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return entered; });
  }
  bool finished_when_removed = false;
  std::thread remover([&] {
    fanout.remove(id);
    std::lock_guard lock(m);
    finished_when_removed = finished;
  });
  {
    std::lock_guard lock(m);
    release = true;
  }
  cv.notify_all();
  remover.join();
  reader.join();
  BOOST_TEST(finished_when_removed);
  BOOST_TEST(fanout.size() == 0u);
}

BOOST_AUTO_TEST_CASE(a_call_that_timed_out_is_a_lost_agent_and_other_codes_keep_their_kind) {
  namespace ec = ferry::protocol::error_code;
  using ferry::ErrorKind;
  auto timed_out = ferry::remote::call_error({ec::kRequestCancelled, "sync/state: no reply from the agent within 50 ms", {}},
                                             "sync/state on box: no reply from the agent within 50 ms");
  BOOST_TEST((timed_out.kind == ErrorKind::agent_lost));
  BOOST_TEST(timed_out.message == "sync/state on box: no reply from the agent within 50 ms");
  BOOST_TEST((ferry::remote::call_error({ec::kAgentUnavailable, "gone", {}}, "m").kind == ErrorKind::agent_lost));
  BOOST_TEST((ferry::remote::call_error({ec::kIoError, "disk full", {}}, "m").kind == ErrorKind::io));
  BOOST_TEST((ferry::remote::call_error({ec::kInvalidParams, "bad", {}}, "m").kind == ErrorKind::invalid_input));
}
