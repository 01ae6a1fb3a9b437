// Fuzzes `ferry serve`'s LSP side: the input is one JSON-RPC message (or a JSON array of them)
// dispatched, after initialize, through the server's real binding table: documents with odd URIs,
// missing or mistyped params, unknown commands, commands with odd arguments, watched-file and
// workspace-folder events, progress cancels. Every reply must serialise and every request get
// exactly one. The harness keeps the fuzzer inside a sandbox: file URIs are re-rooted under a
// temporary project (host "local") and the agent binary does not exist, so no link is ever made
// and nothing outside the sandbox is read as a project or written.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "helper/server/server.hpp"
#include "protocol/dispatcher.hpp"
#include "protocol/framing.hpp"

namespace {

using namespace ferry::protocol;
namespace fs = std::filesystem;

struct Sandbox {
  fs::path root;
  std::unique_ptr<ferry::server::Server> server;
  Sandbox() {
    char tmpl[] = "/tmp/ferry-fuzz-lsp-XXXXXX";
    root = ::mkdtemp(tmpl);
    fs::create_directories(root / "proj" / "pkg");
    std::ofstream(root / "proj" / "ferry.json")
        << R"({"name":"fuzz","host":"local","mappings":[{"local":".","remote":"~/fuzz"}],
              "launch":[{"name":"a","script":"main.py"},{"name":"t","kind":"train","config":"cfg.json"}]})";
    std::ofstream(root / "proj" / "main.py") << "if __name__ == '__main__':\n    print(1)\n";
    std::ofstream(root / "proj" / "cfg.json") << R"({"model":{"kind":"mlp"},"optimizer":{"kind":"sgd"}})";
    ::setenv("FERRY_AGENT", (root / "no-such-agent").c_str(), 1);  // every link fails at once
    ::setenv("XDG_CACHE_HOME", (root / "cache").c_str(), 1);
    ::setenv("HOME", root.c_str(), 1);
    if (::chdir((root / "proj").c_str()) != 0) std::abort();
    ferry::server::ServerOptions o;
    o.cwd = root / "proj";
    o.project_dir = root / "proj";
    server = std::make_unique<ferry::server::Server>(o);
  }
};

Sandbox& sandbox() {
  static Sandbox s;
  return s;
}

// Every file URI points into the sandbox (its path, odd characters and all, kept below it).
void reroot(json& j, const fs::path& root) {
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s.starts_with("file://")) j = "file://" + root.string() + "/proj" + s.substr(7);
    else if (s.starts_with("/")) j = (root / "proj").string() + s;
  } else if (j.is_object() || j.is_array()) {
    for (auto& v : j) reroot(v, root);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto& box = sandbox();
  json message = json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) return 0;
  reroot(message, box.root);

  std::deque<std::function<void()>> queued;
  DispatcherHooks hooks;
  hooks.send = [](const json& m) { (void)encode_frame(encode_body(m, Encoding::json)); };
  hooks.post = [&](std::function<void()> t) { queued.push_back(std::move(t)); };
  hooks.on_exit = [](int) {};
  Dispatcher d(box.server->table(), hooks, DispatcherOptions{Encoding::json, true});
  d.handle_body(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"capabilities":{}}})");
  d.handle_body(message.dump(-1, ' ', false, json::error_handler_t::replace));
  while (!queued.empty()) {
    auto t = std::move(queued.front());
    queued.pop_front();
    t();
  }
  if (d.in_flight() != 0) __builtin_trap();  // reply-exactly-once
  return 0;
}
