// run/* against the real ferry-agent binary over pipes (LocalEndpoint): runs under the detached
// supervisor, output streamed by run/attach, exit codes and signals, tty, stdin, and runs that
// outlive the agent that started them. Every wait is on a notification or a deadline.
#define BOOST_TEST_MODULE run_methods
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <sstream>

#include "helper/remote/byte_stream.hpp"
#include "helper/remote/child_process.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "protocol/agent_wire.hpp"
#include "protocol/jsonrpc.hpp"
#include "tests/support/raw_agent.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ferry::remote::LocalEndpoint;
using ferry::remote::LocalEndpointOptions;
using nlohmann::json;
namespace ec = ferry::protocol::error_code;

namespace {

std::string bytes_of(const json& data) {
  if (data.is_binary()) return std::string(data.get_binary().begin(), data.get_binary().end());
  return data.get<std::string>();
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// run/output and run/exited notifications, per run id, in arrival order.
struct Notifications {
  std::mutex mutex;
  std::condition_variable cv;
  std::map<std::string, std::vector<json>> outputs;
  std::map<std::string, json> exited;
  std::vector<std::string> order_errors;

  void on(const ferry::protocol::Notification& n) {
    std::lock_guard lock(mutex);
    std::string id = n.params.value("id", "");
    if (n.method == "run/output") {
      if (exited.contains(id)) order_errors.push_back("run/output after run/exited for " + id);
      outputs[id].push_back(n.params);
    } else if (n.method == "run/exited") {
      exited[id] = n.params;
    }
    cv.notify_all();
  }

  std::optional<json> wait_exited(const std::string& id, std::chrono::milliseconds limit = 20s) {
    std::unique_lock lock(mutex);
    if (!ferry::test::wait_on(cv, lock, [&] { return exited.contains(id); }, limit)) return std::nullopt;
    return exited[id];
  }

  // Waits until the bytes of `stream` (0: both) contain `needle`.
  bool wait_text(const std::string& id, const std::string& needle, int stream = 0, std::chrono::milliseconds limit = 20s) {
    std::unique_lock lock(mutex);
    return ferry::test::wait_on(cv, lock, [&] { return text_locked(id, stream).find(needle) != std::string::npos; }, limit);
  }

  std::string text(const std::string& id, int stream = 0) {
    std::lock_guard lock(mutex);
    return text_locked(id, stream);
  }

  std::vector<json> records(const std::string& id) {
    std::lock_guard lock(mutex);
    return outputs[id];
  }

  void forget(const std::string& id) {
    std::lock_guard lock(mutex);
    outputs.erase(id);
    exited.erase(id);
  }

 private:
  std::string text_locked(const std::string& id, int stream) {
    std::string out;
    for (const auto& r : outputs[id])
      if (stream == 0 || r["stream"] == stream) out += bytes_of(r["data"]);
    return out;
  }
};

// An agent on a temp root and state dir; kills what runs are left when the test ends.
struct Agent {
  fs::path root;
  fs::path state;
  Notifications notes;
  std::unique_ptr<LocalEndpoint> ep;
  ferry::remote::Subscription subscription;

  Agent(fs::path root_dir, fs::path state_dir) : root(std::move(root_dir)), state(std::move(state_dir)) {
    LocalEndpointOptions o;
    o.agent = FERRY_AGENT_PATH;
    o.root = root;
    o.agent_args = {"--state-dir", state.string()};
    ep = std::make_unique<LocalEndpoint>(o);
    subscription = ep->subscribe([this](const ferry::protocol::Notification& n) { notes.on(n); });
    auto info = ep->connect();
    BOOST_REQUIRE_MESSAGE(info.has_value(), (info ? std::string() : info.error().message));
  }

  json call(std::string_view method, json params) {
    auto r = ep->call(method, std::move(params));
    BOOST_REQUIRE_MESSAGE(r.has_value(), std::string(method) + ": " + (r ? std::string() : r.error().message));
    return *r;
  }

  ferry::protocol::ResponseError call_error(std::string_view method, json params) {
    auto r = ep->call(method, std::move(params));
    BOOST_REQUIRE_MESSAGE(!r.has_value(), std::string(method) + " should have failed");
    return r.error();
  }

  std::string start(const std::string& script, json extra = json::object()) {
    extra["argv"] = json::array({"/bin/sh", "-c", script});
    auto r = call("run/start", extra);
    BOOST_REQUIRE(r["id"].is_string());
    return r["id"].get<std::string>();
  }

  json exited_after_attach(const std::string& id, std::uint64_t offset = 0) {
    auto a = call("run/attach", {{"id", id}, {"offset", offset}});
    BOOST_TEST(a["offset"] == offset);
    auto e = notes.wait_exited(id);
    BOOST_REQUIRE_MESSAGE(e.has_value(), "no run/exited for " + id);
    return *e;
  }

  json list_entry(const std::string& id, bool all = false) {
    auto l = call("run/list", {{"all", all}});
    for (const auto& r : l["runs"])
      if (r["id"] == id) return r;
    return json();
  }
};

struct Sandbox {
  ferry::test::TempDir tmp{"ferry-runs"};
  fs::path root;
  fs::path state = tmp.path() / "state";

  Sandbox() {
    fs::create_directories(tmp.path() / "root");
    root = fs::canonical(tmp.path() / "root");
  }
  ~Sandbox() {
    // Runs outlive agents by design: end whatever a failed test left behind.
    std::error_code e;
    for (fs::directory_iterator it(state / "runs", e), end; !e && it != end; it.increment(e)) {
      std::ifstream in(it->path() / "meta.json");
      auto meta = json::parse(in, nullptr, false);
      if (meta.is_discarded() || fs::exists(it->path() / "exit.json")) continue;
      if (meta.value("pgid", 0) > 1) ::kill(-meta.value("pgid", 0), SIGKILL);
      if (meta.value("supervisorPid", 0) > 1) ::kill(meta.value("supervisorPid", 0), SIGKILL);
    }
  }
};

// Offsets must tile the log: each record starts where the previous one ended.
void check_contiguous(const std::vector<json>& records, std::uint64_t start, std::uint64_t end) {
  std::uint64_t at = start;
  for (const auto& r : records) {
    BOOST_TEST(r["offset"].get<std::uint64_t>() == at);
    at += 5 + bytes_of(r["data"]).size();
  }
  BOOST_TEST(at == end);
}

}  // namespace

BOOST_AUTO_TEST_CASE(stdout_and_stderr_apart_in_order_and_exit_code) {
  Sandbox s;
  Agent a(s.root, s.state);
  std::string id = a.start("for i in 1 2 3 4 5 6 7 8; do echo out$i; echo err$i >&2; done; exit 3");
  BOOST_TEST(id.size() == 20u);
  json e = a.exited_after_attach(id);
  BOOST_TEST(e["exitCode"] == 3);
  BOOST_TEST(!e.contains("signal"));
  BOOST_TEST(a.notes.text(id, 1) == "out1\nout2\nout3\nout4\nout5\nout6\nout7\nout8\n");
  BOOST_TEST(a.notes.text(id, 2) == "err1\nerr2\nerr3\nerr4\nerr5\nerr6\nerr7\nerr8\n");
  check_contiguous(a.notes.records(id), 0, e["logBytes"].get<std::uint64_t>());
  BOOST_TEST(a.notes.order_errors.empty());
  json entry = a.list_entry(id);
  BOOST_REQUIRE(entry.is_object());
  BOOST_TEST(entry["state"] == "exited");
  BOOST_TEST(entry["exitCode"] == 3);
  BOOST_TEST(entry["logBytes"] == e["logBytes"]);
  BOOST_TEST(entry["root"] == s.root.string());
  BOOST_TEST(entry["argv"][0] == "/bin/sh");
  BOOST_TEST(entry["endedAt"].get<std::string>().ends_with("Z"));
}

BOOST_AUTO_TEST_CASE(eight_mib_of_binary_output_byte_exact_and_attach_midway) {
  Sandbox s;
  std::string blob(8u << 20, '\0');
  std::mt19937 rng(7);
  for (auto& c : blob) c = static_cast<char>(rng());
  std::ofstream(s.root / "blob.bin", std::ios::binary) << blob;
  Agent a(s.root, s.state);
  std::string id = a.start("cat blob.bin");
  json e = a.exited_after_attach(id);
  BOOST_TEST(e["exitCode"] == 0);
  BOOST_TEST((a.notes.text(id, 1) == blob));
  auto records = a.notes.records(id);
  BOOST_REQUIRE(records.size() > 4u);
  std::uint64_t end = e["logBytes"].get<std::uint64_t>();
  check_contiguous(records, 0, end);

  // Re-attach at a middle record: exactly the rest, then run/exited again.
  std::size_t mid = records.size() / 2;
  std::uint64_t mid_offset = records[mid]["offset"].get<std::uint64_t>();
  std::string rest;
  for (std::size_t i = mid; i < records.size(); ++i) rest += bytes_of(records[i]["data"]);
  a.notes.forget(id);
  json e2 = a.exited_after_attach(id, mid_offset);
  BOOST_TEST(e2 == e);
  BOOST_TEST((a.notes.text(id) == rest));
  check_contiguous(a.notes.records(id), mid_offset, end);

  // Offsets that are not record boundaries, or past the end, are refused.
  BOOST_TEST(a.call_error("run/attach", {{"id", id}, {"offset", mid_offset + 1}}).code == ec::kInvalidParams);
  auto past = a.call_error("run/attach", {{"id", id}, {"offset", end + 5}});
  BOOST_TEST(past.code == ec::kInvalidParams);
  BOOST_TEST(past.message.find("beyond") != std::string::npos, past.message);
  BOOST_TEST(a.call("run/attach", {{"id", id}, {"offset", end}})["state"] == "exited");

  // run/read pages through the same bytes.
  std::string paged;
  std::uint64_t at = 0;
  for (int pages = 0; pages < 1000; ++pages) {
    json r = a.call("run/read", {{"id", id}, {"offset", at}, {"maxBytes", 1 << 20}});
    if (r["records"].empty()) break;
    for (const auto& rec : r["records"]) paged += bytes_of(rec["data"]);
    at = r["next"].get<std::uint64_t>();
  }
  BOOST_TEST(at == end);
  BOOST_TEST((paged == blob));
}

BOOST_AUTO_TEST_CASE(sigterm_to_the_group_reports_signal_15) {
  Sandbox s;
  Agent a(s.root, s.state);
  // The child of the shell must get the signal too: it goes to the whole process group.
  std::string id = a.start("echo ready; sleep 60 & wait");
  a.call("run/attach", {{"id", id}, {"offset", 0}});
  BOOST_REQUIRE(a.notes.wait_text(id, "ready"));
  BOOST_TEST(a.list_entry(id)["state"] == "running");
  a.call("run/signal", {{"id", id}, {"signal", "TERM"}});
  auto e = a.notes.wait_exited(id);
  BOOST_REQUIRE(e.has_value());
  BOOST_TEST((*e)["signal"] == 15);
  BOOST_TEST(!e->contains("exitCode"));
  auto again = a.call_error("run/signal", {{"id", id}, {"signal", "KILL"}});
  BOOST_TEST(again.code == ec::kInvalidParams);
  BOOST_TEST(again.message.find("has exited") != std::string::npos, again.message);
  BOOST_TEST(a.call_error("run/signal", {{"id", id}, {"signal", "BOGUS"}}).code == ec::kInvalidParams);
  BOOST_TEST(a.call_error("run/signal", {{"id", id}, {"signal", 0}}).code == ec::kInvalidParams);
  // Names are case-insensitive, with or without SIG; numbers as strings work too.
  for (const char* name : {"sigusr1", "Usr1", "10"}) {
    std::string id2 = a.start("trap 'echo got-usr1; exit 0' USR1; echo armed; while :; do sleep 1; done");
    a.call("run/attach", {{"id", id2}, {"offset", 0}});
    BOOST_REQUIRE(a.notes.wait_text(id2, "armed"));
    a.call("run/signal", {{"id", id2}, {"signal", name}});
    auto e2 = a.notes.wait_exited(id2);
    BOOST_REQUIRE(e2.has_value());
    BOOST_TEST((*e2)["exitCode"] == 0, name);
    BOOST_TEST(a.notes.text(id2).find("got-usr1") != std::string::npos, name);
  }
}

// A process that exists and is not a zombie (nothing here may reap a re-parented one).
bool running_process(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

BOOST_AUTO_TEST_CASE(what_a_run_leaves_in_its_group_ends_with_it_but_not_a_new_session) {
  Sandbox s;
  Agent a(s.root, s.state);
  std::string id = a.start(
      "sleep 300 >/dev/null 2>&1 & echo $! > left.pid; "
      "setsid sleep 300 >/dev/null 2>&1 & p=$!; echo $p > own.pid; "
      // The run may end only once that child has left its group (field 6 of stat: its session
      // is its own pid); before its setsid it is still the run's and rightly ends with it.
      "while [ \"$(cut -d' ' -f6 /proc/$p/stat)\" != \"$p\" ]; do :; done; echo started");
  json e = a.exited_after_attach(id);
  BOOST_TEST(e["exitCode"] == 0);
  const pid_t left = std::stoi(read_file(s.root / "left.pid"));
  const pid_t own = std::stoi(read_file(s.root / "own.pid"));
  BOOST_TEST(ferry::test::eventually([&] { return !running_process(left); }, 10s), "the straggler in the run's group lives on");
  BOOST_TEST(running_process(own), "a process in a session of its own was ended with the run");
  ::kill(own, SIGKILL);
}

BOOST_AUTO_TEST_CASE(env_and_cwd_and_meta_keeps_env_keys_only) {
  Sandbox s;
  fs::create_directories(s.root / "sub dir");
  Agent a(s.root, s.state);
  std::string id = a.start("pwd; printf '%s|%s' \"$FERRY_TEST_SECRET\" \"$HOME\"",
                           {{"cwd", "sub dir"}, {"env", {{"FERRY_TEST_SECRET", "s3cr3t value"}}}});
  json e = a.exited_after_attach(id);
  BOOST_TEST(e["exitCode"] == 0);
  const char* home = std::getenv("HOME");
  BOOST_TEST(a.notes.text(id, 1) == (s.root / "sub dir").string() + "\ns3cr3t value|" + (home ? home : ""));
  fs::path dir = s.state / "runs" / id;
  std::string meta = read_file(dir / "meta.json");
  BOOST_TEST(meta.find("s3cr3t") == std::string::npos);
  auto m = json::parse(meta);
  BOOST_TEST(m["env"] == json::array({"FERRY_TEST_SECRET"}));
  BOOST_TEST(m["cwd"] == "sub dir");
  BOOST_TEST(m["pgid"] == m["pid"]);
  BOOST_TEST(!fs::exists(dir / "spec.json"));
  BOOST_TEST(fs::exists(dir / "exit.json"));
}

BOOST_AUTO_TEST_CASE(tty_runs_see_a_terminal_of_the_asked_size) {
  Sandbox s;
  Agent a(s.root, s.state);
  std::string id = a.start("tty -s && echo in-tty; test -t 1 && echo out-tty; stty size",
                           {{"tty", true}, {"cols", 100}, {"rows", 30}});
  json e = a.exited_after_attach(id);
  BOOST_TEST(e["exitCode"] == 0);
  std::string out = a.notes.text(id);
  BOOST_TEST(out.find("in-tty") != std::string::npos, out);
  BOOST_TEST(out.find("out-tty") != std::string::npos, out);
  BOOST_TEST(out.find("30 100") != std::string::npos, out);
  for (const auto& r : a.notes.records(id)) BOOST_TEST(r["stream"] == 1);
  // Not a tty: tty -s fails.
  std::string id2 = a.start("tty -s");
  BOOST_TEST(a.exited_after_attach(id2)["exitCode"] != 0);
  BOOST_TEST(a.call_error("run/resize", {{"id", id2}, {"cols", 10}, {"rows", 10}}).code == ec::kInvalidParams);
}

BOOST_AUTO_TEST_CASE(stdin_through_run_input_until_eof) {
  Sandbox s;
  Agent a(s.root, s.state);
  std::string id = a.start("cat; echo done");
  a.call("run/attach", {{"id", id}, {"offset", 0}});
  a.call("run/input", {{"id", id}, {"data", json::binary(std::vector<std::uint8_t>{'h', 'i', ' ', 0, 0xff, ' '})}});
  BOOST_REQUIRE(a.notes.wait_text(id, std::string("hi \0\xff ", 6)));
  a.call("run/input", {{"id", id}, {"data", json::binary(std::vector<std::uint8_t>{'b', 'y', 'e'})}, {"eof", true}});
  auto e = a.notes.wait_exited(id);
  BOOST_REQUIRE(e.has_value());
  BOOST_TEST((*e)["exitCode"] == 0);
  BOOST_TEST((a.notes.text(id, 1) == std::string("hi \0\xff byedone\n", 14)));
  auto late = a.call_error("run/input", {{"id", id}, {"data", json::binary(std::vector<std::uint8_t>{'x'})}});
  BOOST_TEST(late.code == ec::kInvalidParams);
}

BOOST_AUTO_TEST_CASE(run_outlives_a_killed_agent_and_a_new_agent_finds_it) {
  Sandbox s;
  std::string id;
  {
    Agent first(s.root, s.state);
    id = first.start("printf 'part1\\n'; read line; printf 'part2:%s\\n' \"$line\" >&2; exit 7");
    first.call("run/attach", {{"id", id}, {"offset", 0}});
    BOOST_REQUIRE(first.notes.wait_text(id, "part1\n"));
    BOOST_REQUIRE(::kill(first.ep->child_pid(), SIGKILL) == 0);
    first.ep->close();
  }
  Agent second(s.root, s.state);
  BOOST_TEST(second.list_entry(id)["state"] == "running");
  second.call("run/input", {{"id", id}, {"data", json::binary(std::vector<std::uint8_t>{'g', 'o', '\n'})}});
  json e = second.exited_after_attach(id);
  BOOST_TEST(e["exitCode"] == 7);
  BOOST_TEST(second.notes.text(id, 1) == "part1\n");
  BOOST_TEST(second.notes.text(id, 2) == "part2:go\n");
  json entry = second.list_entry(id);
  BOOST_TEST(entry["state"] == "exited");
  BOOST_TEST(entry["exitCode"] == 7);
}

BOOST_AUTO_TEST_CASE(killed_supervisor_makes_the_run_lost) {
  Sandbox s;
  Agent a(s.root, s.state);
  std::string id = a.start("echo up; exec sleep 60");
  a.call("run/attach", {{"id", id}, {"offset", 0}});
  BOOST_REQUIRE(a.notes.wait_text(id, "up\n"));
  auto meta = json::parse(read_file(s.state / "runs" / id / "meta.json"));
  BOOST_REQUIRE(::kill(meta["supervisorPid"].get<int>(), SIGKILL) == 0);
  BOOST_TEST(ferry::test::eventually([&] { return a.list_entry(id)["state"] == "lost"; }, 10s));
  // The open stream ends too, saying the run is lost.
  auto e = a.notes.wait_exited(id);
  BOOST_REQUIRE(e.has_value());
  BOOST_TEST((*e)["lost"] == true);
  // Attaching to a lost run: its backlog, then the lost run/exited.
  a.notes.forget(id);
  BOOST_TEST(a.call("run/attach", {{"id", id}, {"offset", 0}})["state"] == "lost");
  auto again = a.notes.wait_exited(id);
  BOOST_REQUIRE(again.has_value());
  BOOST_TEST((*again)["lost"] == true);
  BOOST_TEST(a.notes.text(id) == "up\n");
  ::kill(-meta["pgid"].get<int>(), SIGKILL);
  // A lost run can be removed; a running one cannot.
  a.call("run/remove", {{"id", id}});
  BOOST_TEST(!fs::exists(s.state / "runs" / id));
}

BOOST_AUTO_TEST_CASE(bad_starts_are_rejected) {
  Sandbox s;
  fs::create_directories(s.tmp.path() / "outside");
  fs::create_directory_symlink(s.tmp.path() / "outside", s.root / "link");
  Agent a(s.root, s.state);
  auto start_in = [&](const std::string& cwd) {
    return a.call_error("run/start", {{"argv", {"/bin/true"}}, {"cwd", cwd}});
  };
  for (std::string cwd : {"../root", "/tmp", "link", "link/x", "missing"}) {
    auto err = start_in(cwd);
    BOOST_TEST(err.code == ec::kInvalidParams, cwd + ": " + err.message);
  }
  BOOST_TEST(a.call_error("run/start", {{"argv", {"no-such-command-ferry"}}}).code == ec::kInvalidParams);
  BOOST_TEST(a.call_error("run/start", {{"argv", json::array()}}).code == ec::kInvalidParams);
  BOOST_TEST(a.call_error("run/start", {{"argv", {"true"}}, {"env", {{"A=B", "x"}}}}).code == ec::kInvalidParams);
  BOOST_TEST(a.call_error("run/attach", {{"id", "../../etc"}, {"offset", 0}}).code == ec::kInvalidParams);
  BOOST_TEST(a.call_error("run/attach", {{"id", "20260101-000000-abcd"}, {"offset", 0}}).code == ec::kInvalidParams);
  // Nothing was left behind by the refused starts.
  BOOST_TEST(a.call("run/list", {{"all", true}})["runs"].empty());
  BOOST_TEST(a.call("run/list", nullptr)["runs"].empty());
  BOOST_TEST(a.call_error("run/list", json::array({1})).code == ec::kInvalidParams);
}

BOOST_AUTO_TEST_CASE(list_is_per_root_newest_first_and_remove) {
  Sandbox s;
  Agent a(s.root, s.state);
  std::string first = a.start("exit 0");
  a.exited_after_attach(first);
  std::string second = a.start("echo waiting; read x");
  a.call("run/attach", {{"id", second}, {"offset", 0}});
  BOOST_REQUIRE(a.notes.wait_text(second, "waiting"));
  auto runs = a.call("run/list", json::object())["runs"];
  BOOST_REQUIRE(runs.size() == 2u);
  BOOST_TEST(runs[0]["id"] >= runs[1]["id"]);
  auto running = a.call("run/list", {{"running", true}})["runs"];
  BOOST_REQUIRE(running.size() == 1u);
  BOOST_TEST(running[0]["id"] == second);
  BOOST_TEST(a.call_error("run/list", {{"running", "yes"}}).message.find("running must be a boolean") != std::string::npos);
  {
    Agent other(s.tmp.path() / "other-root", s.state);
    BOOST_TEST(other.call("run/list", json::object())["runs"].empty());
    BOOST_TEST(other.call("run/list", {{"all", true}})["runs"].size() == 2u);
  }
  auto busy = a.call_error("run/remove", {{"id", second}});
  BOOST_TEST(busy.code == ec::kInvalidParams);
  a.call("run/input", {{"id", second}, {"eof", true}});
  BOOST_TEST(a.notes.wait_exited(second).has_value());
  a.call("run/remove", {{"id", first}});
  a.call("run/remove", {{"id", second}});
  BOOST_TEST(a.call("run/list", json::object())["runs"].empty());
}

BOOST_AUTO_TEST_CASE(detach_stops_the_stream_and_the_run_goes_on) {
  Sandbox s;
  Agent a(s.root, s.state);
  std::string id = a.start("echo one; read x; echo two");
  a.call("run/attach", {{"id", id}, {"offset", 0}});
  BOOST_REQUIRE(a.notes.wait_text(id, "one\n"));
  a.call("run/detach", {{"id", id}});
  a.call("run/input", {{"id", id}, {"data", json::binary(std::vector<std::uint8_t>{'\n'})}});
  BOOST_TEST(ferry::test::eventually([&] { return a.list_entry(id)["state"] == "exited"; }, 10s));
  // Detached before the run ended: nothing more arrived (replies are ordered after notifications).
  a.call("agent/ping", json::object());
  BOOST_TEST(a.notes.text(id) == "one\n");
  BOOST_TEST(!a.notes.wait_exited(id, 1ms).has_value());
}

// Several followers behind one helper (terminals riding an editor's link): each attach with its
// own `follower` is a stream of its own, tagged, and a detach ends only that one.
BOOST_AUTO_TEST_CASE(followers_get_streams_of_their_own) {
  Sandbox s;
  Agent a(s.root, s.state);
  std::mutex mutex;
  std::condition_variable cv;
  std::map<std::string, std::string> text;  // by follower ("" = untagged)
  std::map<std::string, int> exits;
  auto sub = a.ep->subscribe([&](const ferry::protocol::Notification& n) {
    std::lock_guard lock(mutex);
    const std::string who = n.params.value("follower", "");
    if (n.method == "run/output") text[who] += bytes_of(n.params["data"]);
    if (n.method == "run/exited") ++exits[who];
    cv.notify_all();
  });
  auto wait = [&](const std::function<bool()>& done) {
    std::unique_lock lock(mutex);
    return ferry::test::wait_on(cv, lock, done, 20s);
  };
  std::string id = a.start("echo one; read x; echo two; read y; echo three");
  a.call("run/attach", {{"id", id}, {"offset", 0}});
  a.call("run/attach", {{"id", id}, {"offset", 0}, {"follower", "t1"}});
  a.call("run/attach", {{"id", id}, {"offset", 0}, {"follower", "t2"}});
  BOOST_REQUIRE(wait([&] { return text[""] == "one\n" && text["t1"] == "one\n" && text["t2"] == "one\n"; }));
  a.call("run/detach", {{"id", id}, {"follower", "t1"}});
  a.call("run/input", {{"id", id}, {"data", json::binary(std::vector<std::uint8_t>{'\n'})}});
  BOOST_REQUIRE(wait([&] { return text[""] == "one\ntwo\n" && text["t2"] == "one\ntwo\n"; }));
  // Re-attaching one follower restarts only its stream.
  a.call("run/attach", {{"id", id}, {"offset", 0}, {"follower", "t2"}});
  BOOST_REQUIRE(wait([&] { return text["t2"] == "one\ntwo\none\ntwo\n"; }));
  a.call("run/input", {{"id", id}, {"data", json::binary(std::vector<std::uint8_t>{'\n'})}});
  BOOST_REQUIRE(wait([&] { return exits[""] == 1 && exits["t2"] == 1; }));
  a.call("agent/ping", json::object());
  std::lock_guard lock(mutex);
  BOOST_TEST(text[""] == "one\ntwo\nthree\n");
  BOOST_TEST(text["t1"] == "one\n");
  BOOST_TEST(text["t2"] == "one\ntwo\none\ntwo\nthree\n");
  BOOST_TEST(exits["t1"] == 0);
}

// run/start's `attach`: the new run streams from offset 0 at once, no run/attach (the reply says
// `attached`), tagged when a follower is given; a bad one is refused before anything starts.
BOOST_AUTO_TEST_CASE(a_start_can_attach_the_new_run_at_once) {
  Sandbox s;
  Agent a(s.root, s.state);
  std::mutex mutex;
  std::condition_variable cv;
  std::string tagged_text;
  auto sub = a.ep->subscribe([&](const ferry::protocol::Notification& n) {
    std::lock_guard lock(mutex);
    if (n.method == "run/output" && n.params.value("follower", "") == "t9") tagged_text += bytes_of(n.params["data"]);
    cv.notify_all();
  });
  auto r = a.call("run/start", {{"argv", {"/bin/sh", "-c", "echo one; echo two >&2; exit 4"}}, {"attach", json::object()}});
  BOOST_TEST(r["attached"]["offset"] == 0);
  const std::string id = r["id"].get<std::string>();
  auto e = a.notes.wait_exited(id);
  BOOST_REQUIRE(e.has_value());
  BOOST_TEST((*e)["exitCode"] == 4);
  BOOST_TEST(a.notes.text(id, 1) == "one\n");
  BOOST_TEST(a.notes.text(id, 2) == "two\n");
  BOOST_TEST(a.notes.order_errors.empty());

  // Tagged: the stream is that follower's.
  r = a.call("run/start", {{"argv", {"/bin/sh", "-c", "echo tagged"}}, {"attach", {{"follower", "t9"}, {"ports", true}}}});
  {
    std::unique_lock lock(mutex);
    BOOST_REQUIRE(ferry::test::wait_on(cv, lock, [&] { return tagged_text == "tagged\n"; }, 20s));
  }
  // Without `attach`, nothing streams by itself.
  a.notes.forget(id);
  r = a.call("run/start", {{"argv", {"/bin/sh", "-c", "echo quiet"}}});
  BOOST_TEST(!r.contains("attached"));
  const std::string quiet = r["id"].get<std::string>();
  BOOST_REQUIRE(ferry::test::eventually([&] { return a.list_entry(quiet).value("state", "") == "exited"; }, 20s));
  a.call("agent/ping", json::object());
  BOOST_TEST(a.notes.text(quiet).empty());

  for (const json& bad : {json(7), json{{"follower", 7}}, json{{"ports", "yes"}}}) {
    auto err = a.call_error("run/start", {{"argv", {"/bin/sh", "-c", "touch started"}}, {"attach", bad}});
    BOOST_TEST(err.message.find("attach") != std::string::npos, err.message);
  }
  BOOST_TEST(!fs::exists(s.root / "started"));
}

BOOST_AUTO_TEST_CASE(a_follower_must_be_one_short_line) {
  Sandbox s;
  Agent a(s.root, s.state);
  std::string id = a.start("true");
  for (const json& bad : {json(7), json(std::string(65, 'x')), json("a\nb")}) {
    auto e = a.call_error("run/attach", {{"id", id}, {"offset", 0}, {"follower", bad}});
    BOOST_TEST(e.message.find("follower must be a string") != std::string::npos, e.message);
    e = a.call_error("run/detach", {{"id", id}, {"follower", bad}});
    BOOST_TEST(e.message.find("follower must be a string") != std::string::npos, e.message);
  }
  BOOST_TEST(a.exited_after_attach(id).value("exitCode", -1) == 0);
}

namespace {

// The agent on raw pipes, so the test decides when (and whether) its stdout is read.
struct RawAgent {
  ferry::test::RawAgent raw;

  RawAgent(const fs::path& root, const fs::path& state)
      : raw({FERRY_AGENT_PATH, "--root", root.string(), "--state-dir", state.string()}) {}

  void send(int id, std::string method, json params) {
    raw.send(ferry::protocol::Request{id, std::move(method), std::move(params)});
  }

  ferry::protocol::Message next() { return raw.next(); }

  json result() {
    auto m = next();
    auto* resp = std::get_if<ferry::protocol::Response>(&m);
    BOOST_REQUIRE(resp != nullptr);
    BOOST_REQUIRE(resp->ok());
    return std::get<json>(resp->outcome);
  }

  long rss_kib() {
    std::ifstream in("/proc/" + std::to_string(raw.child.pid()) + "/status");
    std::string line;
    while (std::getline(in, line))
      if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
    return -1;
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(a_slow_reader_stalls_the_stream_without_buffering_it) {
  Sandbox s;
  RawAgent a(s.root, s.state);
  constexpr long kOutput = 48l << 20;
  a.send(1, "run/start", {{"argv", {"/bin/sh", "-c", "head -c " + std::to_string(kOutput) + " /dev/zero"}}});
  std::string id = a.result()["id"].get<std::string>();
  a.send(2, "run/attach", {{"id", id}, {"offset", 0}});
  // Nobody reads the agent's stdout while the run writes all 48 MiB and ends.
  BOOST_REQUIRE(ferry::test::eventually([&] { return fs::exists(s.state / "runs" / id / "exit.json"); }, 30s));
  long rss = a.rss_kib();
  BOOST_TEST(rss > 0);
  BOOST_TEST(rss < 24 * 1024, "agent RSS " << rss << " KiB with 48 MiB unsent");
  BOOST_TEST(a.result()["state"] == "running");  // as it was when the attach was answered
  BOOST_TEST_MESSAGE("agent RSS with 48 MiB unsent: " << rss << " KiB");
  long received = 0;
  std::uint64_t offset = 0;
  auto drain_start = std::chrono::steady_clock::now();
  while (true) {
    auto m = a.next();
    auto* n = std::get_if<ferry::protocol::Notification>(&m);
    BOOST_REQUIRE(n != nullptr);
    if (n->method == "run/exited") {
      BOOST_TEST(n->params["exitCode"] == 0);
      BOOST_TEST(n->params["logBytes"] == offset);
      break;
    }
    BOOST_REQUIRE(n->method == "run/output");
    BOOST_REQUIRE(n->params["offset"] == offset);
    auto bytes = n->params["data"].get_binary().size();
    received += static_cast<long>(bytes);
    offset += 5 + bytes;
  }
  BOOST_TEST(received == kOutput);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - drain_start).count();
  BOOST_TEST_MESSAGE("streamed 48 MiB of backlog in " << secs << " s (" << 48 / secs << " MiB/s)");
}

BOOST_AUTO_TEST_CASE(agent_eof_ends_streams_and_closes_stdout_while_the_run_goes_on) {
  Sandbox s;
  std::string id;
  {
    RawAgent a(s.root, s.state);
    a.send(1, "run/start", {{"argv", {"/bin/sh", "-c", "echo up; read x; echo after:$x"}}});
    id = a.result()["id"].get<std::string>();
    a.send(2, "run/attach", {{"id", id}, {"offset", 0}});
    BOOST_TEST(a.result()["state"] == "running");
    auto m = a.next();
    auto* n = std::get_if<ferry::protocol::Notification>(&m);
    BOOST_REQUIRE(n != nullptr);
    BOOST_TEST(n->method == "run/output");
    a.raw.stream->close_write();
    // The agent exits on EOF with a stream open, and nothing (no supervisor) keeps its stdout
    // open: the SSH channel would close.
    auto status = a.raw.child.wait_for(10s);
    BOOST_REQUIRE(status.has_value());
    BOOST_TEST(WIFEXITED(*status));
    BOOST_TEST(WEXITSTATUS(*status) == 0);
    char buf[4096];
    ferry::remote::ReadResult r;
    do r = a.raw.stream->read_some(buf, std::chrono::steady_clock::now() + 10s);
    while (r.status == ferry::remote::ReadStatus::data);
    BOOST_TEST((r.status == ferry::remote::ReadStatus::eof));
  }
  Agent b(s.root, s.state);
  BOOST_TEST(b.list_entry(id)["state"] == "running");
  b.call("run/input", {{"id", id}, {"data", "x1\n"}});
  BOOST_TEST(b.exited_after_attach(id)["exitCode"] == 0);
  BOOST_TEST(b.notes.text(id) == "up\nafter:x1\n");
  // agent/shutdown with a stream open also ends cleanly.
  std::string id2 = b.start("echo again; read y || echo eof-seen");
  b.call("run/attach", {{"id", id2}, {"offset", 0}});
  BOOST_REQUIRE(b.notes.wait_text(id2, "again\n"));
  b.call("agent/shutdown", json::object());
  BOOST_TEST(ferry::test::eventually([&] { return !b.ep->connected(); }, 10s));
  Agent c(s.root, s.state);
  BOOST_TEST(c.list_entry(id2)["state"] == "running");
  c.call("run/input", {{"id", id2}, {"eof", true}});
  BOOST_TEST(c.exited_after_attach(id2)["exitCode"] == 0);
  BOOST_TEST(c.notes.text(id2) == "again\neof-seen\n");
}

BOOST_AUTO_TEST_CASE(resize_reaches_the_tty) {
  Sandbox s;
  Agent a(s.root, s.state);
  std::string id = a.start("stty size; read x; stty size", {{"tty", true}});
  a.call("run/attach", {{"id", id}, {"offset", 0}});
  BOOST_REQUIRE(a.notes.wait_text(id, "24 80"));
  a.call("run/resize", {{"id", id}, {"cols", 132}, {"rows", 43}});
  a.call("run/input", {{"id", id}, {"data", "\n"}});
  BOOST_TEST(a.notes.wait_text(id, "43 132"), a.notes.text(id));
  BOOST_TEST(a.notes.wait_exited(id).has_value());
  BOOST_TEST(a.call_error("run/resize", {{"id", id}, {"cols", 0}, {"rows", 10}}).code == ec::kInvalidParams);
}

BOOST_AUTO_TEST_CASE(streams_still_work_without_inotify) {
  Sandbox s;
  ::setenv("FERRY_AGENT_TEST_NO_INOTIFY", "1", 1);
  Agent a(s.root, s.state);
  ::unsetenv("FERRY_AGENT_TEST_NO_INOTIFY");
  std::string id = a.start("echo first; read x; echo second:$x; exit 4");
  a.call("run/attach", {{"id", id}, {"offset", 0}});
  BOOST_REQUIRE(a.notes.wait_text(id, "first\n"));
  a.call("run/input", {{"id", id}, {"data", "y\n"}});
  auto e = a.notes.wait_exited(id);
  BOOST_REQUIRE(e.has_value());
  BOOST_TEST((*e)["exitCode"] == 4);
  BOOST_TEST(a.notes.text(id) == "first\nsecond:y\n");
}

// An IDE's second Stop kills ferry after its first sent SIGINT: the agent finishes the job.
BOOST_AUTO_TEST_CASE(a_helper_gone_after_asking_a_run_to_stop_gets_it_killed) {
  Sandbox s;
  std::string stubborn, untouched, let_go;
  const std::string ignore_int = "trap 'echo got INT' INT; echo ready; while :; do sleep 0.05; done";
  {
    Agent first(s.root, s.state);
    stubborn = first.start(ignore_int);
    untouched = first.start(ignore_int);
    let_go = first.start(ignore_int);
    for (const auto& id : {stubborn, untouched, let_go}) {
      first.call("run/attach", {{"id", id}, {"offset", 0}});
      BOOST_REQUIRE(first.notes.wait_text(id, "ready\n"));
    }
    first.call("run/signal", {{"id", stubborn}, {"signal", "INT"}, {"killOnDisconnect", true}});
    first.call("run/signal", {{"id", let_go}, {"signal", "INT"}, {"killOnDisconnect", true}});
    BOOST_REQUIRE(first.notes.wait_text(stubborn, "got INT\n"));
    first.call("run/detach", {{"id", let_go}});  // letting go on purpose (ferry's SIGTERM) disarms
    auto bad = first.call_error("run/signal", {{"id", untouched}, {"signal", "INT"}, {"killOnDisconnect", "yes"}});
    BOOST_TEST(bad.code == ec::kInvalidParams);
    BOOST_TEST(bad.message.find("killOnDisconnect must be a boolean") != std::string::npos, bad.message);
    BOOST_REQUIRE(::kill(first.ep->child_pid(), SIGKILL) == 0);  // not even the agent says goodbye...
    first.ep->close();
  }
  // ...so it never got to act (a killed agent is a rebooted box's case). The next one that is
  // asked does, when its stdin ends without a detach, as when ferry is SIGKILLed.
  {
    Agent look(s.root, s.state);
    BOOST_TEST(look.list_entry(stubborn)["state"] == "running");
  }
  {
    RawAgent second(s.root, s.state);
    second.send(1, "run/signal", {{"id", stubborn}, {"signal", "INT"}, {"killOnDisconnect", true}});
    second.result();
    second.raw.stream->close_write();
    BOOST_REQUIRE(second.raw.child.wait_for(10s).has_value());
  }
  Agent third(s.root, s.state);
  BOOST_TEST(ferry::test::eventually([&] { return third.list_entry(stubborn)["state"] == "exited"; }, 10s));
  BOOST_TEST(third.list_entry(stubborn)["signal"] == SIGKILL);
  BOOST_TEST(third.list_entry(untouched)["state"] == "running");
  BOOST_TEST(third.list_entry(let_go)["state"] == "running");
}

BOOST_AUTO_TEST_CASE(list_says_whether_a_live_agent_follows_a_running_run) {
  Sandbox s;
  Agent a(s.root, s.state);
  std::string id = a.start("echo ready; read x");
  BOOST_TEST(a.list_entry(id)["followed"] == false);
  a.call("run/attach", {{"id", id}, {"offset", 0}});
  BOOST_REQUIRE(a.notes.wait_text(id, "ready\n"));
  BOOST_TEST(a.list_entry(id)["followed"] == true);
  {
    Agent other(s.root, s.state);  // another helper's agent sees the same
    BOOST_TEST(other.list_entry(id)["followed"] == true);
    a.call("run/detach", {{"id", id}});
    BOOST_TEST(other.list_entry(id)["followed"] == false);
    other.call("run/attach", {{"id", id}, {"offset", 0}});
    BOOST_REQUIRE(other.notes.wait_text(id, "ready\n"));
    BOOST_TEST(a.list_entry(id)["followed"] == true);
    BOOST_REQUIRE(::kill(other.ep->child_pid(), SIGKILL) == 0);  // a follower that dies lets go
    other.ep->close();
  }
  BOOST_TEST(a.list_entry(id)["followed"] == false);
  a.call("run/input", {{"id", id}, {"data", json::binary(std::vector<std::uint8_t>{'\n'})}});
  BOOST_TEST(ferry::test::eventually([&] { return a.list_entry(id)["state"] == "exited"; }, 10s));
  BOOST_TEST(!a.list_entry(id).contains("followed"));  // said of running runs only
}
