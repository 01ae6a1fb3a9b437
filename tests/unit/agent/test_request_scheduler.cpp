// The agent's request scheduler with a scripted handler: parallel requests overlap and are
// answered out of order, keyed inline requests wait for their parallel ones only, barriers wait
// for all, nothing queued is lost when the scheduler ends, and nothing not yet begun runs once a
// reply could not be written. Every wait has a deadline.
#define BOOST_TEST_MODULE request_scheduler
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "remote-runtime/agent/request_scheduler.hpp"

using namespace ferry::protocol;
using ferry::agent::RequestLane;
using ferry::agent::RequestScheduler;
using namespace std::chrono_literals;

namespace {

// What happened, in order, plus gates the scripted handler can wait on.
struct Script {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> events;  // "start X", "end X", "reply X"
  bool gate_open = false;

  void log(std::string e) {
    std::lock_guard lock(mu);
    events.push_back(std::move(e));
    cv.notify_all();
  }
  void open_gate() {
    std::lock_guard lock(mu);
    gate_open = true;
    cv.notify_all();
  }
  // False when the gate stayed shut for 5 s (the order under test did not happen).
  bool wait_gate() {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 5s, [&] { return gate_open; });
  }
  bool wait_event(const std::string& e) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 5s, [&] { return std::find(events.begin(), events.end(), e) != events.end(); });
  }
  std::ptrdiff_t at(const std::string& e) {
    std::lock_guard lock(mu);
    auto it = std::find(events.begin(), events.end(), e);
    return it == events.end() ? -1 : it - events.begin();
  }
};

// Methods: "gated:<name>" waits for the gate; anything else returns at once. The lane comes
// from params {"lane": "parallel"|"barrier"|"inline", "key": ...}.
RequestScheduler make(Script& s, unsigned workers) {
  return RequestScheduler(
      workers, 4,
      [&s](const Message& m) -> std::optional<Response> {
        const auto& r = std::get<Request>(m);
        const std::string name = r.params.value("name", "");
        s.log(std::string("start ") + name);
        bool ok = true;
        if (r.method == "gated") ok = s.wait_gate();
        s.log(std::string("end ") + name);
        return make_result(r.id, json{{"name", name}, {"ok", ok}});
      },
      [&s](const Response& r) {
        const json& result = std::get<json>(r.outcome);
        BOOST_TEST(result["ok"].get<bool>(), "request " << result["name"] << " gave up waiting for its gate");
        s.log(std::string("reply ") + result["name"].get<std::string>());
        return true;
      },
      [](const Request& r) {
        const std::string lane = r.params.value("lane", "inline");
        RequestLane l;
        l.key = r.params.value("key", "");
        l.kind = lane == "parallel" ? RequestLane::parallel : lane == "barrier" ? RequestLane::barrier : RequestLane::inline_now;
        return l;
      });
}

Request req(int id, std::string method, std::string name, std::string lane, std::string key = "") {
  return Request{id, std::move(method), json{{"name", std::move(name)}, {"lane", std::move(lane)}, {"key", std::move(key)}}};
}

}  // namespace

BOOST_AUTO_TEST_CASE(parallel_requests_overlap_and_are_answered_out_of_order) {
  Script s;
  {
    RequestScheduler sched = make(s, 2);
    // "slow" cannot finish until "fast", sent after it, has been answered.
    sched.submit(req(1, "gated", "slow", "parallel", "a"));
    sched.submit(req(2, "quick", "fast", "parallel", "b"));
    BOOST_REQUIRE(s.wait_event("reply fast"));
    s.open_gate();
    BOOST_REQUIRE(s.wait_event("reply slow"));
  }
  BOOST_TEST(s.at("reply fast") < s.at("reply slow"));
}

BOOST_AUTO_TEST_CASE(keyed_inline_request_waits_for_its_parallel_ones_only) {
  Script s;
  RequestScheduler sched = make(s, 2);
  // The reader: an append of upload 1 (held at the gate), an append of upload 2, a commit of
  // upload 2 (must not wait for upload 1), then the commit of upload 1 (must wait).
  std::jthread reader([&] {
    sched.submit(req(1, "gated", "append1", "parallel", "upload:1"));
    sched.submit(req(2, "quick", "append2", "parallel", "upload:2"));
    sched.submit(req(3, "quick", "commit2", "inline", "upload:2"));
    sched.submit(req(4, "quick", "commit1", "inline", "upload:1"));
  });
  BOOST_REQUIRE(s.wait_event("reply commit2"));
  BOOST_TEST(s.at("end append1") == -1);  // commit2 ran while upload 1's append was still running
  BOOST_TEST(s.at("start commit1") == -1);
  s.open_gate();
  reader.join();
  BOOST_TEST(s.at("end append2") < s.at("start commit2"));
  BOOST_TEST(s.at("end append1") < s.at("start commit1"));
}

BOOST_AUTO_TEST_CASE(barrier_waits_for_every_earlier_parallel_request) {
  Script s;
  RequestScheduler sched = make(s, 3);
  std::jthread reader([&] {
    sched.submit(req(1, "gated", "write1", "parallel", "batch"));
    sched.submit(req(2, "gated", "write2", "parallel", "upload:7"));
    sched.submit(req(3, "quick", "state", "barrier"));
    sched.submit(req(4, "quick", "after", "parallel", "batch"));
  });
  BOOST_REQUIRE(s.wait_event("start write1"));
  BOOST_REQUIRE(s.wait_event("start write2"));
  BOOST_TEST(s.at("start state") == -1);
  s.open_gate();
  reader.join();
  BOOST_REQUIRE(s.wait_event("reply after"));  // queued by the reader; a worker may not have run it yet
  BOOST_TEST(s.at("end write1") < s.at("start state"));
  BOOST_TEST(s.at("end write2") < s.at("start state"));
  BOOST_TEST(s.at("end state") < s.at("start after"));  // submitted after the barrier ran
}

BOOST_AUTO_TEST_CASE(ending_the_scheduler_answers_everything_queued) {
  Script s;
  {
    RequestScheduler sched = make(s, 1);
    s.open_gate();
    for (int i = 0; i < 20; ++i) sched.submit(req(i, "gated", std::string("w").append(std::to_string(i)), "parallel", "batch"));
  }
  for (int i = 0; i < 20; ++i) BOOST_TEST(s.at(std::string("reply w").append(std::to_string(i))) >= 0, "w" << i << " was never answered");
}

BOOST_AUTO_TEST_CASE(without_workers_everything_runs_inline_in_order) {
  Script s;
  RequestScheduler sched = make(s, 0);
  sched.submit(req(1, "quick", "one", "parallel", "batch"));
  BOOST_TEST(s.at("reply one") >= 0);  // answered before submit returned
  sched.submit(req(2, "quick", "two", "barrier"));
  BOOST_TEST(s.at("reply one") < s.at("reply two"));
}

// The helper went away with requests still in the pipe: once a reply cannot be written, the
// requests not yet begun are never run (a write landing after a reconnect would look like a
// remote change), on the reader and on the workers alike.
BOOST_AUTO_TEST_CASE(once_a_reply_cannot_be_written_later_requests_do_not_run) {
  for (unsigned workers : {0u, 1u}) {
    Script s;
    {
      RequestScheduler sched(
          workers, 4,
          [&s](const Message& m) -> std::optional<Response> {
            const auto& r = std::get<Request>(m);
            s.log(std::string("start ").append(r.params.value("name", "")));
            return make_result(r.id, json{{"name", r.params.value("name", "")}});
          },
          [](const Response& r) { return std::get<json>(r.outcome)["name"] != "lost"; },
          [](const Request& r) {
            RequestLane l;
            l.kind = r.params.value("lane", "inline") == "parallel" ? RequestLane::parallel : RequestLane::inline_now;
            return l;
          });
      sched.submit(req(1, "quick", "lost", "inline"));
      BOOST_TEST(sched.failed());
      sched.submit(req(2, "quick", "late-inline", "inline"));
      sched.submit(req(3, "quick", "late-parallel", "parallel", "batch"));
      sched.drain();
    }
    BOOST_TEST(s.at("start lost") >= 0);
    BOOST_TEST(s.at("start late-inline") == -1, workers << " workers");
    BOOST_TEST(s.at("start late-parallel") == -1, workers << " workers");
  }
}
