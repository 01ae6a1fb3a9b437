// Dispatcher: lifecycle gating, routing, batches, reply-exactly-once, cancellation and
// progress, driven directly with an inline or a queued executor or a schedule hook (no I/O).
#define BOOST_TEST_MODULE dispatcher
#include <boost/test/unit_test.hpp>

#include <deque>
#include <functional>
#include <stdexcept>
#include <vector>

#include "protocol/dispatcher.hpp"
#include "protocol/messages.hpp"

using namespace ferry::protocol;

namespace {

struct Harness {
  BindingTable table;
  std::vector<json> sent;
  std::deque<std::function<void()>> queued;  // worker tasks, run when the test says
  std::optional<int> exit_code;
  std::vector<std::string> logs;
  std::unique_ptr<Dispatcher> d;

  explicit Harness(bool lsp = true) {
    table.request<PingParams, PingResult>(method::kPing, [](const PingParams& p, CallContext&) {
      return std::expected<PingResult, ResponseError>(PingResult{p.payload});
    });
    table.request<EmptyParams, NullResult>(method::kShutdown, [](const EmptyParams&, CallContext&) {
      return std::expected<NullResult, ResponseError>(NullResult{});
    });
    table.request<InitializeParams, EmptyResult>(method::kInitialize, [](const InitializeParams&, CallContext&) {
      return std::expected<EmptyResult, ResponseError>(EmptyResult{});
    });
    table.request<TestSleepParams, TestSleepResult>(
        method::kTestSleep,
        [](const TestSleepParams& p, CallContext& ctx) -> std::expected<TestSleepResult, ResponseError> {
          auto progress = ctx.progress();
          progress.begin("t");
          progress.report("half", 50);
          return TestSleepResult{p.ms};
        },
        Execution::worker);
    table.request<EmptyParams, EmptyResult>("test/throw", [](const EmptyParams&, CallContext&)
                                                -> std::expected<EmptyResult, ResponseError> {
      throw std::runtime_error("boom");
    });
    DispatcherHooks hooks;
    hooks.send = [this](const json& m) { sent.push_back(m); };
    hooks.post = [this](std::function<void()> t) { queued.push_back(std::move(t)); };
    hooks.on_exit = [this](int c) { exit_code = c; };
    hooks.log = [this](LogLevel, const std::string& s) { logs.push_back(s); };
    d = std::make_unique<Dispatcher>(table, std::move(hooks), DispatcherOptions{Encoding::json, lsp});
  }

  // The dispatcher's contract: every posted task runs before it is destroyed.
  ~Harness() { run_queued(); }

  void send(const std::string& body) { d->handle_body(body); }
  void run_queued() {
    while (!queued.empty()) {
      auto t = std::move(queued.front());
      queued.pop_front();
      t();
    }
  }
  void initialize() {
    send(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}})");
    BOOST_REQUIRE_EQUAL(sent.size(), 1u);
    BOOST_REQUIRE(sent[0].contains("result"));
    sent.clear();
  }
};

int error_code_of(const json& m) { return m.at("error").at("code").get<int>(); }

}  // namespace

BOOST_AUTO_TEST_CASE(requests_before_initialize_get_32002_and_initialize_opens_the_session) {
  Harness h;
  h.send(R"({"jsonrpc":"2.0","id":1,"method":"ferry/ping"})");
  BOOST_REQUIRE_EQUAL(h.sent.size(), 1u);
  BOOST_TEST(error_code_of(h.sent[0]) == error_code::kServerNotInitialized);
  BOOST_TEST((h.d->lifecycle() == Lifecycle::uninitialized));
  h.sent.clear();
  h.initialize();
  BOOST_TEST((h.d->lifecycle() == Lifecycle::running));
  h.send(R"({"jsonrpc":"2.0","id":2,"method":"ferry/ping","params":{"payload":[1]}})");
  BOOST_TEST(h.sent.back() == json::parse(R"({"jsonrpc":"2.0","id":2,"result":{"payload":[1]}})"));
}

BOOST_AUTO_TEST_CASE(shutdown_then_requests_get_32600_and_exit_reports_0) {
  Harness h;
  h.initialize();
  h.send(R"({"jsonrpc":"2.0","id":1,"method":"shutdown"})");
  BOOST_TEST(h.sent.back()["result"].is_null());
  h.send(R"({"jsonrpc":"2.0","id":2,"method":"ferry/ping"})");
  BOOST_TEST(error_code_of(h.sent.back()) == error_code::kInvalidRequest);
  h.send(R"({"jsonrpc":"2.0","method":"exit"})");
  BOOST_REQUIRE(h.exit_code.has_value());
  BOOST_TEST(*h.exit_code == 0);
}

BOOST_AUTO_TEST_CASE(exit_without_shutdown_reports_1) {
  Harness h;
  h.initialize();
  h.send(R"({"jsonrpc":"2.0","method":"exit"})");
  BOOST_REQUIRE(h.exit_code.has_value());
  BOOST_TEST(*h.exit_code == 1);
}

BOOST_AUTO_TEST_CASE(without_lifecycle_requests_are_served_at_once) {
  Harness h(false);
  h.send(R"({"jsonrpc":"2.0","id":1,"method":"ferry/ping"})");
  BOOST_TEST(h.sent.back().contains("result"));
  h.send(R"({"jsonrpc":"2.0","method":"exit"})");
  BOOST_TEST(!h.exit_code.has_value());
}

BOOST_AUTO_TEST_CASE(parse_errors_unknown_methods_and_throwing_handlers_are_answered) {
  Harness h;
  h.initialize();
  h.send("{nope");
  BOOST_TEST(error_code_of(h.sent.back()) == error_code::kParseError);
  BOOST_TEST(h.sent.back()["id"].is_null());
  h.send(R"({"jsonrpc":"2.0","id":"x","method":"no/such"})");
  BOOST_TEST(error_code_of(h.sent.back()) == error_code::kMethodNotFound);
  BOOST_TEST(h.sent.back()["id"] == "x");
  h.send(R"({"jsonrpc":"2.0","id":3,"method":"test/throw"})");
  BOOST_TEST(error_code_of(h.sent.back()) == error_code::kInternalError);
  BOOST_TEST(h.sent.back()["error"]["message"].get<std::string>().find("boom") != std::string::npos);
  BOOST_TEST(h.d->in_flight() == 0u);
}

BOOST_AUTO_TEST_CASE(invalid_params_name_the_pointer) {
  Harness h;
  h.initialize();
  h.send(R"({"jsonrpc":"2.0","id":1,"method":"ferry/testSleep","params":{"ms":-5}})");
  h.run_queued();  // params are decoded where the handler runs
  BOOST_REQUIRE_EQUAL(h.sent.size(), 1u);
  BOOST_TEST(error_code_of(h.sent[0]) == error_code::kInvalidParams);
  BOOST_TEST(h.sent[0]["error"]["data"]["pointer"] == "/ms");
  BOOST_TEST(h.sent[0]["error"]["message"].get<std::string>().starts_with("invalid params for ferry/testSleep: /ms: "));
}

BOOST_AUTO_TEST_CASE(batches_answer_one_array_after_worker_replies) {
  Harness h;
  h.initialize();
  h.send(R"([{"jsonrpc":"2.0","id":1,"method":"ferry/testSleep","params":{"ms":1}},
             {"jsonrpc":"2.0","method":"initialized"},
             {"jsonrpc":"2.0","id":2,"method":"ferry/ping"}])");
  BOOST_TEST(h.sent.empty());  // the worker element is still pending
  h.run_queued();
  BOOST_REQUIRE_EQUAL(h.sent.size(), 1u);
  BOOST_REQUIRE(h.sent[0].is_array());
  BOOST_TEST(h.sent[0].size() == 2u);
  // Responses are in completion order: the inline ping finished first.
  BOOST_TEST(h.sent[0][0]["id"] == 2);
  BOOST_TEST(h.sent[0][1]["id"] == 1);
  h.sent.clear();
  h.send(R"([{"jsonrpc":"2.0","method":"initialized"}])");
  BOOST_TEST(h.sent.empty());
  h.send("[]");
  BOOST_REQUIRE_EQUAL(h.sent.size(), 1u);
  BOOST_TEST(error_code_of(h.sent[0]) == error_code::kInvalidRequest);
}

BOOST_AUTO_TEST_CASE(cancel_before_the_worker_starts_answers_32800_without_running) {
  Harness h;
  h.initialize();
  h.send(R"({"jsonrpc":"2.0","id":7,"method":"ferry/testSleep","params":{"ms":1,"workDoneToken":"t"}})");
  BOOST_TEST(h.d->in_flight() == 1u);
  h.send(R"({"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":7}})");
  h.run_queued();
  BOOST_REQUIRE_EQUAL(h.sent.size(), 1u);  // no progress: the handler never ran
  BOOST_TEST(error_code_of(h.sent[0]) == error_code::kRequestCancelled);
  BOOST_TEST(h.d->in_flight() == 0u);
}

BOOST_AUTO_TEST_CASE(progress_brackets_the_result_on_the_clients_token) {
  Harness h;
  h.initialize();
  h.send(R"({"jsonrpc":"2.0","id":8,"method":"ferry/testSleep","params":{"ms":3,"workDoneToken":"tok"}})");
  h.run_queued();
  BOOST_REQUIRE_EQUAL(h.sent.size(), 4u);
  BOOST_TEST(h.sent[0]["method"] == "$/progress");
  BOOST_TEST(h.sent[0]["params"]["token"] == "tok");
  BOOST_TEST(h.sent[0]["params"]["value"]["kind"] == "begin");
  BOOST_TEST(h.sent[1]["params"]["value"]["kind"] == "report");
  BOOST_TEST(h.sent[1]["params"]["value"]["percentage"] == 50);
  BOOST_TEST(h.sent[2]["params"]["value"]["kind"] == "end");  // sent by the reporter's destructor
  BOOST_TEST(h.sent[3]["result"]["sleptMs"] == 3);
}

BOOST_AUTO_TEST_CASE(duplicate_in_flight_ids_are_refused) {
  Harness h;
  h.initialize();
  h.send(R"({"jsonrpc":"2.0","id":9,"method":"ferry/testSleep","params":{"ms":1}})");
  h.send(R"({"jsonrpc":"2.0","id":9,"method":"ferry/testSleep","params":{"ms":1}})");
  BOOST_REQUIRE_EQUAL(h.sent.size(), 1u);
  BOOST_TEST(error_code_of(h.sent[0]) == error_code::kInvalidRequest);
  h.run_queued();
  BOOST_TEST(h.sent.back()["result"]["sleptMs"] == 1);
  // Once answered, the id may be used again.
  h.send(R"({"jsonrpc":"2.0","id":9,"method":"ferry/ping"})");
  BOOST_TEST(h.sent.back().contains("result"));
}

BOOST_AUTO_TEST_CASE(cancel_all_cancels_queued_work) {
  Harness h;
  h.initialize();
  h.send(R"({"jsonrpc":"2.0","id":1,"method":"ferry/testSleep","params":{"ms":1}})");
  h.send(R"({"jsonrpc":"2.0","id":2,"method":"ferry/testSleep","params":{"ms":1}})");
  h.d->cancel_all();
  h.run_queued();
  BOOST_REQUIRE_EQUAL(h.sent.size(), 2u);
  for (const auto& m : h.sent) BOOST_TEST(error_code_of(m) == error_code::kRequestCancelled);
}

BOOST_AUTO_TEST_CASE(responses_from_the_peer_are_ignored) {
  Harness h;
  h.initialize();
  h.send(R"({"jsonrpc":"2.0","id":1,"result":5})");
  BOOST_TEST(h.sent.empty());
}

BOOST_AUTO_TEST_CASE(cbor_bodies_dispatch_the_same) {
  BindingTable table;
  table.request<PingParams, PingResult>(method::kPing, [](const PingParams& p, CallContext&) {
    return std::expected<PingResult, ResponseError>(PingResult{p.payload});
  });
  std::vector<json> sent;
  DispatcherHooks hooks;
  hooks.send = [&](const json& m) { sent.push_back(m); };
  Dispatcher d(table, hooks, DispatcherOptions{Encoding::cbor, false});
  d.handle_body(encode_body(json{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ferry/ping"}, {"params", {{"payload", 2}}}},
                            Encoding::cbor));
  BOOST_REQUIRE_EQUAL(sent.size(), 1u);
  BOOST_TEST(sent[0]["result"]["payload"] == 2);
  d.handle_body("\xff\xff");
  BOOST_TEST(error_code_of(sent.back()) == error_code::kParseError);
}

// The schedule hook (the agent's RequestScheduler): every request reaches it with its method,
// params and Execution, inline ones too; it decides when the task runs, a cancel that arrives
// before answers -32800 without running, and a dropped task answers -32603 so no id stays in
// flight.
BOOST_AUTO_TEST_CASE(schedule_hook_decides_where_every_request_runs) {
  BindingTable table;
  int runs = 0;
  table.request<PingParams, PingResult>(method::kPing, [&runs](const PingParams& p, CallContext&) {
    ++runs;
    return std::expected<PingResult, ResponseError>(PingResult{p.payload});
  });
  std::vector<json> sent;
  std::vector<std::string> seen;  // "method payload execution"
  std::deque<std::function<void()>> held;
  DispatcherHooks hooks;
  hooks.send = [&](const json& m) { sent.push_back(m); };
  hooks.post = [](std::function<void()>) { BOOST_FAIL("post is not used when schedule is set"); };
  hooks.schedule = [&](const std::string& m, const json& params, Execution e, std::function<void()> task) {
    seen.push_back(m + " " + params["payload"].dump() + (e == Execution::inline_ ? " inline" : " worker"));
    held.push_back(std::move(task));
  };
  Dispatcher d(table, hooks, DispatcherOptions{Encoding::cbor, false});
  auto ping = [](int id) {
    return json{{"jsonrpc", "2.0"}, {"id", id}, {"method", "ferry/ping"}, {"params", {{"payload", id}}}};
  };
  d.handle_value(ping(1));
  d.handle_value(ping(2));
  d.handle_value(ping(3));
  BOOST_TEST(seen == std::vector<std::string>({"ferry/ping 1 inline", "ferry/ping 2 inline", "ferry/ping 3 inline"}));
  BOOST_TEST(sent.empty());  // nothing runs until the hook says
  BOOST_TEST(d.in_flight() == 3u);
  d.handle_value(json{{"jsonrpc", "2.0"}, {"method", "$/cancelRequest"}, {"params", {{"id", 2}}}});
  held[0]();
  held[1]();
  held.pop_front();
  held.pop_front();
  held.clear();  // dropped unrun
  BOOST_REQUIRE_EQUAL(sent.size(), 3u);
  BOOST_TEST(sent[0]["result"]["payload"] == 1);
  BOOST_TEST(error_code_of(sent[1]) == error_code::kRequestCancelled);
  BOOST_TEST(error_code_of(sent[2]) == error_code::kInternalError);
  BOOST_TEST(runs == 1);
  BOOST_TEST(d.in_flight() == 0u);
  // Unknown methods never reach the hook.
  d.handle_value(json{{"jsonrpc", "2.0"}, {"id", 4}, {"method", "nope"}});
  BOOST_TEST(seen.size() == 3u);
  BOOST_TEST(error_code_of(sent.back()) == error_code::kMethodNotFound);
}
