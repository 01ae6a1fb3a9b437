// The typed sync/*, run/*, train/*, tunnel/* and debug/prepare messages (protocol/messages_*.hpp):
// params decode with pointer errors and their defaults, results encode the documented wire keys
// (protocol/spec/protocol.md), and the run state words round-trip.
#define BOOST_TEST_MODULE messages_ide
#include <boost/test/unit_test.hpp>

#include "protocol/link_state.hpp"
#include "protocol/messages.hpp"

using namespace ferry::protocol;

BOOST_AUTO_TEST_CASE(sync_push_params_default_and_check_delete) {
  SyncPushParams p;
  BOOST_TEST(!from_json(json(nullptr), p).has_value());
  BOOST_TEST((p.deletes == SyncDeletes::owned));
  BOOST_TEST(!p.dry_run);
  BOOST_TEST(!from_json(json::parse(R"({"delete":"mirror","paths":["a.py"],"dryRun":true})"), p).has_value());
  BOOST_TEST((p.deletes == SyncDeletes::mirror));
  BOOST_TEST(p.dry_run);
  BOOST_TEST(p.paths == std::vector<std::string>{"a.py"});
  auto e = from_json(json::parse(R"({"delete":"all"})"), p);
  BOOST_REQUIRE(e.has_value());
  BOOST_TEST(e->pointer == "/delete");
  BOOST_TEST(to_string(SyncDeletes::none) == "none");
}

BOOST_AUTO_TEST_CASE(sync_pull_needs_paths_and_file_saved_takes_a_path_or_uri) {
  SyncPullParams pull;
  BOOST_TEST(from_json(json::object(), pull)->pointer == "/paths");
  BOOST_TEST(from_json(json::parse(R"({"paths":[]})"), pull)->pointer == "/paths");
  FileSavedParams saved;
  BOOST_TEST(!from_json(json::parse(R"({"uri":"file:///p/a.py"})"), saved).has_value());
  BOOST_TEST(saved.path == "file:///p/a.py");
  BOOST_TEST(from_json(json::object(), saved)->pointer == "/path");
}

BOOST_AUTO_TEST_CASE(sync_status_leaves_out_what_it_does_not_know) {
  SyncStatusResult s;
  json j = to_json(s);
  BOOST_TEST(j == (json{{"pendingSaves", json::array()}, {"saving", false}, {"lastSync", nullptr}, {"busy", false}}));
  s.connected = false;
  s.last_error = "no space";
  s.last_sync = SyncResult{};
  s.last_sync->files_sent = 2;
  j = to_json(s);
  BOOST_TEST(j["connected"] == false);
  BOOST_TEST(!j.contains("endpoint"));
  BOOST_TEST(j["lastError"] == "no space");
  BOOST_TEST(j["lastSync"]["filesSent"] == 2);
}

BOOST_AUTO_TEST_CASE(run_params_take_a_signal_by_name_or_number_and_refuse_negative_offsets) {
  RunIdParams p;
  BOOST_TEST(!from_json(json::parse(R"({"id":"r1","signal":9})"), p).has_value());
  BOOST_TEST(p.signal == "9");
  BOOST_TEST(from_json(json::parse(R"({"id":"r1","offset":-1})"), p)->pointer == "/offset");
  BOOST_TEST(from_json(json::object(), p)->pointer == "/id");
  RunStartParams start;
  BOOST_TEST(from_json(json::parse(R"({"argv":[]})"), start)->pointer == "/argv");
}

BOOST_AUTO_TEST_CASE(run_results_and_notifications_have_the_wire_keys) {
  BOOST_TEST(to_json(RunStartResult{"r1", 42, "2026-01-01T00:00:00Z", {"python", "a.py"}, "."}) ==
             (json{{"id", "r1"}, {"pid", 42}, {"startedAt", "2026-01-01T00:00:00Z"}, {"argv", {"python", "a.py"}}, {"cwd", "."}}));
  BOOST_TEST(to_json(RunAttachResult{"r1", 7, "exited"}) == (json{{"id", "r1"}, {"offset", 7}, {"state", "exited"}}));
  RunListResult list;
  list.runs.push_back({"r1", {"x"}, ".", "/root", "running", 1, "t0", 5, "", std::nullopt, std::nullopt});
  json l = to_json(list);
  BOOST_TEST(!l["runs"][0].contains("endedAt"));
  BOOST_TEST(!l["runs"][0].contains("exitCode"));
  BOOST_TEST(l["runs"][0]["logBytes"] == 5);
  RunExitedParams failed;
  failed.id = "r1";
  failed.status = 255;
  failed.error = "link lost";
  BOOST_TEST(to_json(failed) == (json{{"id", "r1"}, {"status", 255}, {"error", "link lost"}}));
  RunExitedParams ended;
  ended.id = "r2";
  ended.status = 3;
  ended.exit_code = 3;
  ended.ended_at = "t1";
  ended.log_bytes = 10;
  BOOST_TEST(to_json(ended) ==
             (json{{"id", "r2"}, {"status", 3}, {"exitCode", 3}, {"endedAt", "t1"}, {"logBytes", 10}}));
}

BOOST_AUTO_TEST_CASE(run_states_round_trip_and_unknown_words_stay_unknown) {
  for (auto s : {RunState::running, RunState::exited, RunState::lost})
    BOOST_TEST((run_state_from_string(to_string(s)) == s));
  BOOST_TEST((run_state_from_string("zombie") == RunState::unknown));
}

BOOST_AUTO_TEST_CASE(link_states_round_trip_and_unknown_words_stay_unknown) {
  for (auto s : {LinkState::connecting, LinkState::connected, LinkState::reconnecting, LinkState::disconnected})
    BOOST_TEST((link_state_from_string(to_string(s)) == s));
  BOOST_TEST(to_string(LinkState::reconnecting) == "reconnecting");
  BOOST_TEST((link_state_from_string("Connected") == LinkState::unknown));
}

BOOST_AUTO_TEST_CASE(forward_states_have_the_tunnel_list_words) {
  BOOST_TEST(to_string(ForwardState::active) == "active");
  BOOST_TEST(to_string(ForwardState::waiting) == "waiting");
}

BOOST_AUTO_TEST_CASE(train_messages) {
  TrainStopParams stop;
  BOOST_TEST(from_json(json::parse(R"({"runId":"r","signal":"HUP"})"), stop)->pointer == "/signal");
  TrainStartParams start;
  BOOST_TEST(from_json(json::parse(R"({"config":""})"), start)->pointer == "/config");
  BOOST_TEST(!from_json(json::parse(R"({"config":"c.json"})"), start).has_value());
  BOOST_TEST(start.sync);
  TrainStartResult r{"r1", {"ferry-train"}, ".", "local", std::nullopt};
  BOOST_TEST(!to_json(r).contains("sync"));
  r.sync = SyncResult{};
  BOOST_TEST(to_json(r)["sync"]["filesSent"] == 0);
  TrainExitedParams exited;
  exited.run_id = "r1";
  exited.status = 0;
  exited.outputs.emplace();
  BOOST_TEST(to_json(exited) == (json{{"runId", "r1"}, {"status", 0}, {"outputs", json::array()}}));
}

BOOST_AUTO_TEST_CASE(tunnel_messages) {
  TunnelCloseParams close;
  BOOST_TEST(from_json(json::parse(R"({"id":"1"})"), close)->pointer == "/id");
  TunnelOpenParams open;
  BOOST_TEST(from_json(json::array(), open).has_value());
  TunnelInfo t;
  t.id = 1;
  t.bind_address = "127.0.0.1";
  t.local_port = 8888;
  t.remote_port = 8888;
  t.remote_host = "localhost";
  t.state = "active";
  t.description = "127.0.0.1:8888 -> localhost:8888";
  json j = to_json(t);
  BOOST_TEST(j["kind"] == "local");
  BOOST_TEST(j["remoteHost"] == "localhost");
  BOOST_TEST(!j.contains("localHost"));
  BOOST_TEST(!j.contains("name"));
  BOOST_TEST(!j.contains("error"));
  t.local = false;
  t.local_host = "127.0.0.1";
  BOOST_TEST(to_json(t)["kind"] == "reverse");
  BOOST_TEST(!to_json(t).contains("remoteHost"));
  BOOST_TEST(to_json(TunnelListResult{{t}})["tunnels"].size() == 1u);
}

BOOST_AUTO_TEST_CASE(debug_prepare_params_check_ports_and_wait) {
  DebugPrepareParams p;
  BOOST_TEST(!from_json(json::parse(R"({"command":["train.py"]})"), p).has_value());
  BOOST_TEST(p.port == kDefaultDebugpyPort);
  BOOST_TEST(p.just_my_code);
  auto pointer_of = [](const char* params) {
    DebugPrepareParams fresh;
    auto e = from_json(json::parse(params), fresh);
    return e ? e->pointer : std::string("(no error)");
  };
  BOOST_TEST(pointer_of(R"({"command":["t.py"],"port":0})") == "/port");
  BOOST_TEST(pointer_of(R"({"command":["t.py"],"localPort":70000})") == "/localPort");
  BOOST_TEST(pointer_of(R"({"command":["t.py"],"wait":0})") == "/wait");
  BOOST_TEST(to_json(DebugPrepareResult{json{{"type", "debugpy"}}, "r1", 5678}) ==
             (json{{"configuration", {{"type", "debugpy"}}}, {"runId", "r1"}, {"localPort", 5678}}));
}
