// `ferry serve` as a plain language server on the local host: a command from a code lens runs the
// script with its output in a log file the editor is asked to show (a message naming the file when
// it refuses), the exit as window/showMessage; a ferry-aware client gets run/output instead;
// didSave and didChangeWatchedFiles sync; watched files are registered when the client can; a
// workspace without ferry.json is offered one; questions become showMessageRequest; a document
// nested too deep is a diagnostic, not a crash.
#define BOOST_TEST_MODULE lsp_surface
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "protocol/file_uri.hpp"
#include "tests/support/loopback_port.hpp"
#include "tests/support/serve_client.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using json = nlohmann::json;
using ferry::test::read_file;
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ferry::protocol::path_to_file_uri;
using ferry::test::ServeClient;

namespace {

struct Env {
  ferry::test::TempDir cache{"ferry-lsp-cache"};
  Env() {
    ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
    ::setenv("XDG_CACHE_HOME", cache.path().c_str(), 1);
  }
};
Env* g_env = nullptr;
struct EnvHolder {
  Env env;
  EnvHolder() { g_env = &env; }
};

// A project on the local host; its mapping lands in the sandbox under XDG_CACHE_HOME.
struct Project {
  ferry::test::TempDir dir{"ferry-lsp"};
  std::string name;
  explicit Project(const std::string& n) : name(n) {
    ferry::test::write_file(dir / "ferry.json",
                            json{{"name", name}, {"host", "local"}, {"interpreter", "/usr/bin/python3"},
                                 {"mappings", {{{"local", "."}, {"remote", "~/work/" + name}}}}}
                                .dump());
    ferry::test::write_file(dir / "main.py", "print('hello from the lens')\nif __name__ == '__main__':\n    pass\n");
  }
  fs::path box() const { return g_env->cache.path() / "ferry" / "local" / name / "work" / name; }
  std::string uri(const std::string& rel) const { return path_to_file_uri((dir.path() / rel).string()); }
};

json plain_capabilities(bool show_document = true) {
  return {{"window", {{"workDoneProgress", true}, {"showDocument", {{"support", show_document}}}}}};
}

// Answers the server's requests as a cooperative editor would.
ServeClient::Answer editor(bool show_document_ok, std::string choose = "") {
  return [=](const json& request) -> json {
    const std::string m = request["method"];
    if (m == "window/showDocument") {
      if (!show_document_ok) return {{"error", {{"code", -32601}, {"message", "no showDocument here"}}}};
      return {{"result", {{"success", true}}}};
    }
    if (m == "window/showMessageRequest") return {{"result", choose.empty() ? json(nullptr) : json{{"title", choose}}}};
    return {{"result", nullptr}};
  };
}

auto message_containing(const std::string& text) {
  return [text](const json& n) {
    return n["method"] == "window/showMessage" && n["params"]["message"].get<std::string>().find(text) != std::string::npos;
  };
}

const json* request_named(const ServeClient& c, const std::string& method) {
  for (const auto& r : c.server_requests)
    if (r["method"] == method) return &r;
  return nullptr;
}

}  // namespace

BOOST_GLOBAL_FIXTURE(EnvHolder);

BOOST_AUTO_TEST_CASE(a_lens_command_runs_the_script_into_a_log_the_editor_shows) {
  Project p("lens-run");
  ServeClient c(p.dir.path(), plain_capabilities(), p.uri(""));
  auto r = c.call("workspace/executeCommand", {{"command", "ferry.run"}, {"arguments", {p.uri("main.py")}}}, editor(true));
  BOOST_REQUIRE_MESSAGE(r.contains("result"), r.dump());
  const fs::path log = r["result"]["log"].get<std::string>();
  BOOST_TEST(log.parent_path() == p.dir.path() / ".ferry" / "logs");
  auto exited = c.wait_notification(message_containing("exited with status 0"), 30s, editor(true));
  BOOST_REQUIRE(exited);
  BOOST_TEST((*exited)["params"]["type"] == 3);
  BOOST_TEST(read_file(log) == "hello from the lens\n");
  const json* shown = request_named(c, "window/showDocument");
  BOOST_REQUIRE(shown);
  BOOST_TEST((*shown)["params"]["uri"] == path_to_file_uri(log.string()));
  BOOST_TEST((*shown)["params"]["takeFocus"] == false);
  BOOST_TEST((*shown)["params"].contains("selection"));  // LSP4IJ needs it
  BOOST_TEST(request_named(c, "window/workDoneProgress/create") != nullptr);
  BOOST_TEST(read_file(p.box() / "main.py").find("hello from the lens") != std::string::npos);  // synced first
  for (const auto& n : c.notifications) BOOST_TEST(n["method"] != "run/output");
}

BOOST_AUTO_TEST_CASE(an_editor_without_show_document_is_told_where_the_log_is) {
  Project p("lens-nodoc");
  ferry::test::write_file(p.dir / "main.py", "import sys\nprint('failing')\nsys.exit(3)\n");
  ServeClient c(p.dir.path(), plain_capabilities(false), p.uri(""));
  auto r = c.call("workspace/executeCommand", {{"command", "ferry.run"}, {"arguments", {p.uri("main.py")}}}, editor(false));
  BOOST_REQUIRE_MESSAGE(r.contains("result"), r.dump());
  BOOST_TEST(c.wait_notification(message_containing(r["result"]["log"].get<std::string>()), 30s, editor(false)).has_value());
  auto exited = c.wait_notification(message_containing("exited with status 3"), 30s, editor(false));
  BOOST_REQUIRE(exited);
  BOOST_TEST((*exited)["params"]["type"] == 1);  // an error
}

BOOST_AUTO_TEST_CASE(a_ferry_client_gets_run_output_and_no_log) {
  Project p("lens-ferry");
  ServeClient c(p.dir.path());
  auto r = c.call("workspace/executeCommand", {{"command", "ferry.run"}, {"arguments", {{{"uri", p.uri("main.py")}, {"args", {"x"}}}}}});
  BOOST_REQUIRE_MESSAGE(r.contains("result"), r.dump());
  const std::string id = r["result"]["id"];
  BOOST_TEST(r["result"]["argv"].dump().find("\"x\"") != std::string::npos, r.dump());
  BOOST_REQUIRE(c.wait_notification([&](const json& n) { return n["method"] == "run/exited" && n["params"]["id"] == id; }, 30s));
  std::string text;
  for (const auto& n : c.notifications)
    if (n["method"] == "run/output" && n["params"]["id"] == id) text += n["params"]["text"].get<std::string>();
  BOOST_TEST(text == "hello from the lens\n");
  BOOST_TEST(!fs::exists(p.dir / ".ferry" / "logs"));

  // tty: the run gets a terminal on the box (VS Code's "with a Terminal"), the size its resize says.
  ferry::test::write_file(p.dir / "tty.py", "import os, shutil\nprint('tty', os.isatty(0), os.isatty(1), shutil.get_terminal_size().columns)\n");
  auto t = c.call("workspace/executeCommand", {{"command", "ferry.run"}, {"arguments", {{{"uri", p.uri("tty.py")}, {"tty", true}}}}});
  BOOST_REQUIRE_MESSAGE(t.contains("result"), t.dump());
  const std::string tty_id = t["result"]["id"];
  BOOST_REQUIRE(c.wait_notification([&](const json& n) { return n["method"] == "run/exited" && n["params"]["id"] == tty_id; }, 30s));
  std::string tty_text;
  for (const auto& n : c.notifications)
    if (n["method"] == "run/output" && n["params"]["id"] == tty_id) tty_text += n["params"]["text"].get<std::string>();
  BOOST_TEST(tty_text == "tty True True 80\r\n");
  auto bad = c.call("workspace/executeCommand", {{"command", "ferry.run"}, {"arguments", {{{"uri", p.uri("tty.py")}, {"tty", "yes"}}}}});
  BOOST_TEST(bad["error"]["message"].get<std::string>().find("tty: expected true or false") != std::string::npos, bad.dump());
}

BOOST_AUTO_TEST_CASE(a_plain_client_is_told_a_terminal_run_needs_a_terminal) {
  Project p("lens-tty");
  ServeClient c(p.dir.path(), plain_capabilities(), p.uri(""));
  auto r = c.call("workspace/executeCommand", {{"command", "ferry.run"}, {"arguments", {{{"uri", p.uri("main.py")}, {"tty", true}}}}},
                  editor(true));
  BOOST_TEST(r["error"]["message"].get<std::string>().find("`ferry run --tty` in a terminal") != std::string::npos, r.dump());
  BOOST_TEST(!fs::exists(p.box() / "main.py"));  // refused before anything was synced or started
}

BOOST_AUTO_TEST_CASE(did_save_and_watched_file_changes_reach_the_box) {
  Project p("saves");
  json caps = plain_capabilities();
  caps["workspace"] = {{"didChangeWatchedFiles", {{"dynamicRegistration", true}}}};
  ServeClient c(p.dir.path(), caps, p.uri(""));
  BOOST_TEST(c.call("workspace/executeCommand", {{"command", "ferry.sync"}}, editor(true)).contains("result"));
  ferry::test::write_file(p.dir / "main.py", "print('saved')\n");
  c.notify("textDocument/didSave", {{"textDocument", {{"uri", p.uri("main.py")}}}});
  BOOST_TEST(ferry::test::eventually([&] { return read_file(p.box() / "main.py") == "print('saved')\n"; }, 20s));
  // Made outside the editor (a git checkout, a generator): the client's watcher reports it.
  ferry::test::write_file(p.dir / "gen" / "made.py", "x = 1\n");
  c.notify("workspace/didChangeWatchedFiles", {{"changes", {{{"uri", p.uri("gen/made.py")}, {"type", 1}}}}});
  BOOST_TEST(ferry::test::eventually([&] { return read_file(p.box() / "gen" / "made.py") == "x = 1\n"; }, 20s));
  fs::remove(p.dir / "gen" / "made.py");
  c.notify("workspace/didChangeWatchedFiles", {{"changes", {{{"uri", p.uri("gen/made.py")}, {"type", 3}}}}});
  BOOST_TEST(ferry::test::eventually([&] { return !fs::exists(p.box() / "gen" / "made.py"); }, 20s));
  // The registration went out after `initialized`, with a watcher for everything (a round trip
  // first, so whatever the server sent before it has been read).
  BOOST_TEST(c.call("sync/status", json::object(), editor(true)).contains("result"));
  const json* reg = request_named(c, "client/registerCapability");
  BOOST_REQUIRE(reg);
  BOOST_TEST((*reg)["params"]["registrations"][0]["method"] == "workspace/didChangeWatchedFiles");
}

// Every mapping syncs over the project's one link: sync/push pushes both (the second to a
// directory of its own outside the sandbox), a save in the second mapping reaches its remote,
// and a saved file in no mapping stays here.
BOOST_AUTO_TEST_CASE(every_mapping_syncs_and_a_save_goes_to_its_mapping) {
  ferry::test::TempDir dir{"ferry-lsp-maps"};
  ferry::test::TempDir elsewhere{"ferry-lsp-maps-b"};
  const fs::path b = elsewhere.path() / "b";
  ferry::test::write_file(dir / "ferry.json", json{{"name", "maps"},
                                                   {"host", "local"},
                                                   {"mappings", {{{"local", "src"}, {"remote", "~/work/maps"}},
                                                                 {{"local", "data-scripts"}, {"remote", b.string()}}}}}
                                                  .dump());
  ferry::test::write_file(dir / "src/main.py", "m1\n");
  ferry::test::write_file(dir / "data-scripts/prep.py", "p1\n");
  ferry::test::write_file(dir / "notes.txt", "n1\n");
  const fs::path a = g_env->cache.path() / "ferry/local/maps/work/maps";
  auto uri = [&](const std::string& rel) { return path_to_file_uri((dir.path() / rel).string()); };
  ServeClient c(dir.path(), plain_capabilities(), uri(""));

  auto pushed = c.call("sync/push", json::object(), editor(true));
  BOOST_REQUIRE_MESSAGE(pushed.contains("result"), pushed.dump());
  BOOST_TEST(pushed["result"]["filesSent"] == 2);
  BOOST_TEST(read_file(a / "main.py") == "m1\n");
  BOOST_TEST(read_file(b / "prep.py") == "p1\n");

  ferry::test::write_file(dir / "notes.txt", "n2\n");
  c.notify("textDocument/didSave", {{"textDocument", {{"uri", uri("notes.txt")}}}});
  ferry::test::write_file(dir / "data-scripts/prep.py", "p2\n");
  c.notify("textDocument/didSave", {{"textDocument", {{"uri", uri("data-scripts/prep.py")}}}});
  BOOST_TEST(ferry::test::eventually([&] { return read_file(b / "prep.py") == "p2\n"; }, 20s));
  ferry::test::write_file(dir / "src/main.py", "m2\n");
  c.notify("textDocument/didSave", {{"textDocument", {{"uri", uri("src/main.py")}}}});
  BOOST_TEST(ferry::test::eventually([&] { return read_file(a / "main.py") == "m2\n"; }, 20s));
  BOOST_TEST(!fs::exists(a / "notes.txt"));
  BOOST_TEST(!fs::exists(b / "notes.txt"));
  BOOST_TEST(!fs::exists(a.parent_path() / "notes.txt"));

  // A pull path names its mapping's folder (several mappings: relative to the project root).
  ferry::test::write_file(b / "out/r.txt", "r\n");
  auto pulled = c.call("sync/pull", {{"paths", {"data-scripts/out"}}}, editor(true));
  BOOST_REQUIRE_MESSAGE(pulled.contains("result"), pulled.dump());
  BOOST_TEST(read_file(dir / "data-scripts/out/r.txt") == "r\n");
  auto lost = c.call("sync/pull", {{"paths", {"outputs"}}}, editor(true));
  BOOST_TEST(lost.contains("error"), lost.dump());
}

BOOST_AUTO_TEST_CASE(a_workspace_without_ferry_json_is_offered_one) {
  ferry::test::TempDir dir("ferry-lsp-new");
  ServeClient c(dir.path(), plain_capabilities(), path_to_file_uri(dir.path().string()));
  auto offer = c.wait_notification(message_containing("wrote " + (dir.path() / "ferry.json").string()), 10s,
                                   editor(true, "Create ferry.json"));
  BOOST_REQUIRE(offer);
  const json* asked = request_named(c, "window/showMessageRequest");
  BOOST_REQUIRE(asked);
  BOOST_TEST((*asked)["params"]["message"].get<std::string>().find("no ferry.json") != std::string::npos);
  auto config = json::parse(read_file(dir / "ferry.json"));
  BOOST_TEST(config["host"] == "local");
  auto loaded = c.call("project/load", json::object());
  BOOST_TEST(loaded.contains("result"), loaded.dump());
}

// LSP4IJ starts ferry serve in every project with a .py file: a folder without ferry.json is asked
// once, whatever the answer, and every later open costs nothing: a line in the log, no question,
// nothing written in the folder.
BOOST_AUTO_TEST_CASE(a_folder_without_ferry_json_is_asked_once) {
  ferry::test::TempDir dir("ferry-lsp-declined");
  auto idle = [&](const json& n) {
    return n["method"] == "window/logMessage" &&
           n["params"]["message"].get<std::string>().find("no ferry.json in " + dir.path().string() + ": ferry stays idle") !=
               std::string::npos;
  };
  {
    ServeClient c(dir.path(), plain_capabilities(), path_to_file_uri(dir.path().string()));
    BOOST_REQUIRE(c.wait_notification(idle, 10s, editor(true, "No")));
    const json* asked = request_named(c, "window/showMessageRequest");
    BOOST_REQUIRE(asked);
    BOOST_TEST((*asked)["params"]["message"].get<std::string>().find("Asked once for this folder") != std::string::npos);
  }
  ServeClient again(dir.path(), plain_capabilities(), path_to_file_uri(dir.path().string()));
  BOOST_REQUIRE(again.wait_notification(idle, 10s, editor(true, "Create ferry.json")));
  BOOST_TEST(request_named(again, "window/showMessageRequest") == nullptr);
  BOOST_TEST(fs::is_empty(dir.path()));  // no ferry.json, no .ferry: the answer lives in the user's config
}

BOOST_AUTO_TEST_CASE(a_launch_entry_runs_from_its_lens_with_its_args_env_and_cwd) {
  Project p("lens-launch");
  ferry::test::write_file(p.dir / "tools" / "show.py",
                          "import os, sys\nprint(os.getcwd().endswith('tools'), sys.argv[1:], os.environ['MODE'])\n");
  auto config = json::parse(read_file(p.dir / "ferry.json"));
  config["launch"] = json::array({json{{"name", "show"}, {"script", "tools/show.py"}, {"args", {"a", "b"}},
                                       {"env", {{"MODE", "fast"}}}, {"cwd", "tools"}},
                                  json{{"name", "fit"}, {"kind", "train"}, {"config", "cfg.json"}}});
  ferry::test::write_file(p.dir / "ferry.json", config.dump(2));
  ferry::test::write_file(p.dir / "cfg.json", R"({"model": {"kind": "mlp"}, "max_steps": 1})");
  ServeClient c(p.dir.path(), plain_capabilities(), p.uri(""));
  auto lenses = c.call("textDocument/codeLens", {{"textDocument", {{"uri", p.uri("ferry.json")}}}});
  BOOST_REQUIRE_MESSAGE(lenses.contains("result") && lenses["result"].size() == 4u, lenses.dump());
  const json command = lenses["result"][2]["command"];
  BOOST_TEST(command["title"] == "\u25B6 Run show on local");
  auto r = c.call("workspace/executeCommand", command, editor(true));
  BOOST_REQUIRE_MESSAGE(r.contains("result"), r.dump());
  BOOST_REQUIRE(c.wait_notification(message_containing("exited with status 0"), 30s, editor(true)));
  BOOST_TEST(read_file(r["result"]["log"].get<std::string>()) == "True ['a', 'b'] fast\n");
  // The wrong command for an entry's kind says which one fits.
  auto wrong = c.call("workspace/executeCommand",
                      {{"command", "ferry.run"}, {"arguments", {{{"uri", p.uri("ferry.json")}, {"launch", "fit"}}}}}, editor(true));
  BOOST_TEST(wrong["error"]["message"].get<std::string>().find("ferry train") != std::string::npos, wrong.dump());
  auto missing = c.call("workspace/executeCommand",
                        {{"command", "ferry.run"}, {"arguments", {{{"uri", p.uri("ferry.json")}, {"launch", "nope"}}}}}, editor(true));
  BOOST_TEST(missing["error"]["message"].get<std::string>().find("show") != std::string::npos, missing.dump());
}

BOOST_AUTO_TEST_CASE(a_command_reports_on_its_own_token_and_its_cancel_stops_it) {
  Project p("progress");
  ServeClient c(p.dir.path(), plain_capabilities(), p.uri(""));
  auto synced = c.call("workspace/executeCommand", {{"command", "ferry.sync"}}, editor(true));
  BOOST_REQUIRE_MESSAGE(synced.contains("result"), synced.dump());
  const json* created = request_named(c, "window/workDoneProgress/create");
  BOOST_REQUIRE(created);
  const json token = (*created)["params"]["token"];
  std::vector<std::string> kinds;
  for (const auto& n : c.notifications)
    if (n["method"] == "$/progress" && n["params"]["token"] == token) kinds.push_back(n["params"]["value"]["kind"]);
  BOOST_REQUIRE(!kinds.empty());
  BOOST_TEST(kinds.front() == "begin");
  BOOST_TEST(kinds.back() == "end");
  BOOST_TEST(std::count(kinds.begin(), kinds.end(), "report") >= 1);  // the sync's summary at least

  // The client cancels the token (here before it even answers the create): the run never starts.
  ServeClient::Answer cancel_at_once = [&](const json& request) -> json {
    if (request["method"] == "window/workDoneProgress/create")
      c.notify("window/workDoneProgress/cancel", {{"token", request["params"]["token"]}});
    return editor(true)(request);
  };
  auto run = c.call("workspace/executeCommand", {{"command", "ferry.run"}, {"arguments", {p.uri("main.py")}}}, cancel_at_once);
  BOOST_REQUIRE_MESSAGE(run.contains("error"), run.dump());
  BOOST_TEST(run["error"]["code"] == -32800, run.dump());
  BOOST_TEST(!fs::exists(p.dir / ".ferry" / "logs"));
}

// ferry.debug's `port` option picks debugpy's port on the box (the VS Code extension sets it: the
// default 5678 may be taken, as it is on a machine where other tests debug too); a bad one is
// refused before anything starts.
BOOST_AUTO_TEST_CASE(ferry_debug_listens_on_the_port_it_is_given) {
  Project p("lens-debug-port");
  ServeClient c(p.dir.path(), {{"experimental", {{"ferry", true}}}}, p.uri(""));
  auto bad = c.call("workspace/executeCommand",
                    {{"command", "ferry.debug"}, {"arguments", {{{"uri", p.uri("main.py")}, {"port", 70000}}}}});
  BOOST_TEST(bad["error"]["message"].get<std::string>().find("port: expected a TCP port") != std::string::npos, bad.dump());
  const int port = ferry::test::free_loopback_port();
  auto r = c.call("workspace/executeCommand",
                  {{"command", "ferry.debug"}, {"arguments", {{{"uri", p.uri("main.py")}, {"port", port}}}}});
  BOOST_REQUIRE_MESSAGE(r.contains("result"), r.dump());
  // The local host is this machine: debugpy listens on the given port here.
  BOOST_TEST(ferry::test::eventually([&] {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
  }, 10s));
  BOOST_TEST(r["result"]["configuration"]["connect"]["port"] == r["result"]["localPort"]);
  (void)c.call("run/signal", {{"id", r["result"]["runId"]}, {"signal", "KILL"}});
}

// A port something on the box already listens on is refused before debugpy starts: before, debugpy
// failed to bind while the listener probe found the other program and the IDE was sent to it.
BOOST_AUTO_TEST_CASE(ferry_debug_refuses_a_port_already_taken_on_the_box) {
  Project p("lens-debug-taken");
  ServeClient c(p.dir.path(), {{"experimental", {{"ferry", true}}}}, p.uri(""));
  // Someone else's server on the box (the local host is this machine).
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  BOOST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd, 1) == 0 &&
                ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  const int port = ntohs(a.sin_port);
  auto r = c.call("workspace/executeCommand",
                  {{"command", "ferry.debug"}, {"arguments", {{{"uri", p.uri("main.py")}, {"port", port}}}}});
  ::close(fd);
  BOOST_REQUIRE_MESSAGE(r.contains("error"), r.dump());
  BOOST_TEST(r["error"]["message"].get<std::string>().find("port " + std::to_string(port) + " on the box is already in use") !=
                 std::string::npos,
             r.dump());
  BOOST_TEST(r["error"]["code"] == -32602);
  // Nothing was started: the box's run list has no debuggee.
  auto runs = c.call("run/list", json::object());
  for (const auto& run : runs["result"]["runs"]) BOOST_TEST(run["state"] != "running", run.dump());
}

// An untrusted project's ferry.json, or a training config, nested 100,000 levels deep: didOpen
// and didSave (with its text, and read from disk) each publish one "nested deeper" diagnostic and
// the server answers the next request. Before the depth limit on documents, the recursive copies
// of the parsed document took the whole server down with SIGSEGV, every time it was opened.
BOOST_AUTO_TEST_CASE(a_document_nested_too_deep_is_a_diagnostic_and_the_server_goes_on) {
  ferry::test::TempDir dir{"ferry-lsp-deep"};
  const std::string nest = std::string(100000, '[') + std::string(100000, ']');
  const std::string project = "{\"name\": \"deep\", \"host\": \"local\", \"exclude\": " + nest + "}";
  const std::string config = "{\"model\": {\"kind\": \"mlp\"}, \"data\": " + nest + "}";
  ferry::test::write_file(dir / "ferry.json", project);
  ferry::test::write_file(dir / "train.json", config);
  ServeClient c(dir.path(), plain_capabilities());
  auto too_deep = [](const std::string& uri) {
    return [uri](const json& n) {
      if (n["method"] != "textDocument/publishDiagnostics" || n["params"]["uri"] != uri) return false;
      const json& d = n["params"]["diagnostics"];
      return d.size() == 1 && d[0]["message"] == "nested deeper than 256 levels" && d[0]["code"] == "json";
    };
  };
  for (const auto& [name, text] : {std::pair{"ferry.json", project}, std::pair{"train.json", config}}) {
    const std::string uri = path_to_file_uri((dir / name).string());
    c.notify("textDocument/didOpen", {{"textDocument", {{"uri", uri}, {"languageId", "json"}, {"version", 1}, {"text", text}}}});
    BOOST_TEST(c.wait_notification(too_deep(uri), 30s).has_value(), name << ": didOpen");
    BOOST_TEST(c.call("ferry/ping", json::object()).contains("result"), name << ": after didOpen");
    c.notify("textDocument/didSave", {{"textDocument", {{"uri", uri}}}, {"text", text}});
    BOOST_TEST(c.wait_notification(too_deep(uri), 30s).has_value(), name << ": didSave with its text");
    c.notify("textDocument/didSave", {{"textDocument", {{"uri", uri}}}});
    BOOST_TEST(c.wait_notification(too_deep(uri), 30s).has_value(), name << ": didSave read from disk");
    BOOST_TEST(c.call("ferry/ping", json::object()).contains("result"), name << ": after didSave");
  }
}
