// The agent's request scheduler with scripted tasks (and once behind a real Dispatcher): parallel
// requests overlap and are answered out of order, keyed inline requests wait for their parallel ones only, barriers wait
// for all, nothing queued is lost when the scheduler ends, and nothing not yet begun runs once a
// reply could not be written. Every wait has a deadline.
#define BOOST_TEST_MODULE request_scheduler
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "protocol/binding_table.hpp"
#include "protocol/dispatcher.hpp"
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

// A scripted scheduler and its requests: "gated" tasks wait for the gate, others return at
// once; a task logs its start, end and reply, as the dispatcher's closures would run the handler
// and write the reply. The lane comes from params {"lane": "parallel"|"barrier"|"inline", "key"}.
struct Sched {
  Script& s;
  RequestScheduler sched;
  Sched(Script& script, unsigned workers)
      : s(script), sched(workers, 4, [](const std::string&, const json& params) {
          const std::string lane = params.value("lane", "inline");
          RequestLane l;
          l.key = params.value("key", "");
          l.kind = lane == "parallel" ? RequestLane::parallel : lane == "barrier" ? RequestLane::barrier : RequestLane::inline_now;
          return l;
        }) {}

  void submit(int, const std::string& method, const std::string& name, const std::string& lane, const std::string& key = "") {
    json params{{"name", name}, {"lane", lane}, {"key", key}};
    sched.schedule(method, params, [this, method, name] {
      s.log("start " + name);
      bool ok = true;
      if (method == "gated") ok = s.wait_gate();
      s.log("end " + name);
      BOOST_TEST(ok, "request " << name << " gave up waiting for its gate");
      s.log("reply " + name);
    });
  }
};

// Params of the dispatcher test's methods.
struct Lane {
  std::string name;
};
std::optional<DecodeError> from_json(const json& j, Lane& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("name", out.name);
  return r.error();
}

}  // namespace

BOOST_AUTO_TEST_CASE(parallel_requests_overlap_and_are_answered_out_of_order) {
  Script s;
  {
    Sched sched(s, 2);
    // "slow" cannot finish until "fast", sent after it, has been answered.
    sched.submit(1, "gated", "slow", "parallel", "a");
    sched.submit(2, "quick", "fast", "parallel", "b");
    BOOST_REQUIRE(s.wait_event("reply fast"));
    s.open_gate();
    BOOST_REQUIRE(s.wait_event("reply slow"));
  }
  BOOST_TEST(s.at("reply fast") < s.at("reply slow"));
}

BOOST_AUTO_TEST_CASE(keyed_inline_request_waits_for_its_parallel_ones_only) {
  Script s;
  Sched sched(s, 2);
  // The reader: an append of upload 1 (held at the gate), an append of upload 2, a commit of
  // upload 2 (must not wait for upload 1), then the commit of upload 1 (must wait).
  std::jthread reader([&] {
    sched.submit(1, "gated", "append1", "parallel", "upload:1");
    sched.submit(2, "quick", "append2", "parallel", "upload:2");
    sched.submit(3, "quick", "commit2", "inline", "upload:2");
    sched.submit(4, "quick", "commit1", "inline", "upload:1");
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
  Sched sched(s, 3);
  std::jthread reader([&] {
    sched.submit(1, "gated", "write1", "parallel", "batch");
    sched.submit(2, "gated", "write2", "parallel", "upload:7");
    sched.submit(3, "quick", "state", "barrier");
    sched.submit(4, "quick", "after", "parallel", "batch");
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
    Sched sched(s, 1);
    s.open_gate();
    for (int i = 0; i < 20; ++i) sched.submit(i, "gated", std::string("w").append(std::to_string(i)), "parallel", "batch");
  }
  for (int i = 0; i < 20; ++i) BOOST_TEST(s.at(std::string("reply w").append(std::to_string(i))) >= 0, "w" << i << " was never answered");
}

BOOST_AUTO_TEST_CASE(without_workers_everything_runs_inline_in_order) {
  Script s;
  Sched sched(s, 0);
  sched.submit(1, "quick", "one", "parallel", "batch");
  BOOST_TEST(s.at("reply one") >= 0);  // answered before submit returned
  sched.submit(2, "quick", "two", "barrier");
  BOOST_TEST(s.at("reply one") < s.at("reply two"));
}

// The helper went away with requests still in the pipe: once a reply cannot be written, the
// requests not yet begun are never run (a write landing after a reconnect would look like a
// remote change), on the reader and on the workers alike.
BOOST_AUTO_TEST_CASE(once_a_reply_cannot_be_written_later_requests_do_not_run) {
  for (unsigned workers : {0u, 1u}) {
    Script s;
    {
      RequestScheduler sched(workers, 4, [](const std::string&, const json& params) {
        RequestLane l;
        l.kind = params.value("lane", "inline") == "parallel" ? RequestLane::parallel : RequestLane::inline_now;
        return l;
      });
      auto submit = [&](const std::string& name, const std::string& lane) {
        sched.schedule("quick", json{{"lane", lane}}, [&, name] {
          s.log("start " + name);
          if (name == "lost") sched.mark_failed();  // its reply could not be written
        });
      };
      submit("lost", "inline");
      BOOST_TEST(sched.failed());
      submit("late-inline", "inline");
      submit("late-parallel", "parallel");
      sched.drain();
    }
    BOOST_TEST(s.at("start lost") >= 0);
    BOOST_TEST(s.at("start late-inline") == -1, workers << " workers");
    BOOST_TEST(s.at("start late-parallel") == -1, workers << " workers");
  }
}

// The reader can be blocked (a full queue, a barrier) while the helper is gone: the link probe,
// asked before each task begins, drops what is queued as a failed reply would.
BOOST_AUTO_TEST_CASE(a_dead_link_probe_keeps_queued_requests_from_beginning) {
  Script s;
  std::atomic<bool> alive{true};
  {
    Sched q(s, 1);
    q.sched.set_link_probe([&] { return alive.load(); });
    q.submit(1, "gated", "running", "parallel");
    BOOST_REQUIRE(s.wait_event("start running"));
    q.submit(2, "quick", "queued", "parallel");
    alive = false;  // the helper's sshd died while "queued" waited for the worker
    s.open_gate();
    q.sched.drain();
    BOOST_TEST(q.sched.failed());
  }
  BOOST_TEST(s.at("end running") >= 0);  // begun before: finishes
  BOOST_TEST(s.at("start queued") == -1);
}

// The scheduler as the Dispatcher's schedule hook, as the agent wires it: parallel requests are
// answered out of order through the dispatcher, and a request dropped after a failed write still
// leaves the dispatcher with nothing in flight (its task answers -32603 as it is destroyed).
BOOST_AUTO_TEST_CASE(as_the_dispatchers_schedule_hook) {
  Script s;
  BindingTable table;
  table.request<Lane, json>("gated", [&s](const Lane& l, CallContext&) -> std::expected<json, ResponseError> {
    s.log("start " + l.name);
    bool ok = s.wait_gate();
    return json{{"ok", ok}};
  });
  table.request<Lane, json>("quick", [&s](const Lane& l, CallContext&) -> std::expected<json, ResponseError> {
    s.log("start " + l.name);
    return json{{"ok", true}};
  });
  std::mutex mu;
  std::vector<json> replies;
  RequestScheduler sched(2, 4, [](const std::string&, const json& params) {
    return RequestLane{params.value("lane", "") == "parallel" ? RequestLane::parallel : RequestLane::inline_now, "k"};
  });
  DispatcherHooks hooks;
  hooks.send = [&](const json& m) {
    std::lock_guard lock(mu);
    replies.push_back(m);
    if (m["id"] == 3) sched.mark_failed();  // the wire broke on this reply
    s.log("reply " + m["id"].dump());
  };
  hooks.schedule = [&](const std::string& method, const json& params, Execution, std::function<void()> task) {
    sched.schedule(method, params, std::move(task));
  };
  Dispatcher d(table, hooks, DispatcherOptions{Encoding::cbor, false});
  auto request = [](int id, const char* method, const char* name, const char* lane) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", {{"name", name}, {"lane", lane}}}};
  };
  d.handle_value(request(1, "gated", "slow", "parallel"));
  d.handle_value(request(2, "quick", "fast", "parallel"));
  BOOST_REQUIRE(s.wait_event("reply 2"));
  s.open_gate();
  BOOST_REQUIRE(s.wait_event("reply 1"));
  sched.drain();
  BOOST_TEST(s.at("reply 2") < s.at("reply 1"));
  d.handle_value(request(3, "quick", "lost", "inline"));
  d.handle_value(request(4, "quick", "late", "inline"));
  BOOST_TEST(s.at("start late") == -1);
  BOOST_TEST(d.in_flight() == 0u);
  std::lock_guard lock(mu);
  BOOST_REQUIRE(replies.size() == 4u);
  BOOST_TEST(replies[3]["error"]["code"] == error_code::kInternalError);
}
