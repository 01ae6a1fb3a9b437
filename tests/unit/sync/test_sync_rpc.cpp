// sync/* over `ferry serve`'s JSON-RPC (a Server on real pipes, the real ferry-agent behind a
// LocalEndpoint): push with $/progress, sync/fileSaved bursts coalesced and made visible by
// sync/flush, sync/status, sync/pull, and a bad param answered as invalid params.
#define BOOST_TEST_MODULE sync_rpc
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "helper/server/server.hpp"
#include "protocol/framing.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry;
using json = nlohmann::json;
namespace fs = std::filesystem;
using ferry::test::TempDir;
using ferry::test::read_file;
using ferry::test::write_file;

namespace {

// A Server on pipes, driven one message at a time.
class Client {
 public:
  explicit Client(server::ServerOptions o) : server_(std::move(o)) {
    int a[2], b[2];
    BOOST_REQUIRE(pipe2(a, O_CLOEXEC) == 0);  // the agent child must not hold our ends open
    BOOST_REQUIRE(pipe2(b, O_CLOEXEC) == 0);
    in_r_ = a[0], in_w_ = a[1], out_r_ = b[0], out_w_ = b[1];
    thread_ = std::thread([this] {
      code_ = server_.run(in_r_, out_w_);
      ::close(out_w_);
    });
  }
  ~Client() {
    if (in_w_ >= 0) ::close(in_w_);
    thread_.join();
    ::close(in_r_);
    ::close(out_r_);
  }
  void send(const json& m) {
    std::string f = protocol::encode_frame(m.dump());
    BOOST_REQUIRE(::write(in_w_, f.data(), f.size()) == static_cast<ssize_t>(f.size()));
  }
  json call(int id, const std::string& method, json params = json::object()) {
    send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
    return wait_for(id);
  }
  void notify(const std::string& method, json params) {
    send({{"jsonrpc", "2.0"}, {"method", method}, {"params", params}});
  }
  // The response with this id; notifications seen meanwhile are kept.
  json wait_for(int id) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
      for (auto it = pending_.begin(); it != pending_.end(); ++it)
        if (it->contains("id") && (*it)["id"] == id && !it->contains("method")) {
          json r = *it;
          pending_.erase(it);
          return r;
        }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      BOOST_REQUIRE_MESSAGE(left.count() > 0, "no response to request " << id);
      pollfd p{out_r_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[65536];
      ssize_t n = ::read(out_r_, buf, sizeof buf);
      BOOST_REQUIRE_MESSAGE(n > 0, "server closed its output");
      decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
      while (auto f = decoder_.next()) {
        BOOST_REQUIRE(f->has_value());
        json m = json::parse(**f);
        if (m.contains("method")) notes_.push_back(m);
        else pending_.push_back(m);
      }
    }
  }
  std::vector<json> notes_;

 private:
  server::Server server_;
  int in_r_, in_w_, out_r_, out_w_;
  int code_ = -1;
  std::thread thread_;
  protocol::FrameDecoder decoder_;
  std::vector<json> pending_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(push_save_flush_status_and_pull_over_json_rpc) {
  TempDir t;
  const fs::path project = t.path() / "proj";
  write_file(project / "ferry.json", R"({"name":"rpc","host":"local","mappings":[{"local":".","remote":"~/work"}]})");
  write_file(project / "a.py", "a1\n");
  write_file(project / "pkg/b.py", "b1\n");
  ::setenv("XDG_CACHE_HOME", (t.path() / "cache").c_str(), 1);
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
  const fs::path remote = t.path() / "cache/ferry/local/rpc/work";

  server::ServerOptions o;
  o.cwd = project;
  Client c(o);
  BOOST_REQUIRE(c.call(1, "initialize", {{"capabilities", json::object()}}).contains("result"));
  c.notify("initialized", json::object());

  json push = c.call(2, "sync/push", {{"workDoneToken", "push-1"}});
  BOOST_REQUIRE_MESSAGE(push.contains("result"), push.dump());
  BOOST_TEST(push["result"]["filesSent"] == 3);  // ferry.json, a.py, pkg/b.py
  BOOST_TEST(read_file(remote / "pkg/b.py") == "b1\n");
  bool begun = false, ended = false, listing = false;
  for (const auto& n : c.notes_)
    if (n["method"] == "$/progress" && n["params"]["token"] == "push-1") {
      begun |= n["params"]["value"]["kind"] == "begin";
      ended |= n["params"]["value"]["kind"] == "end";
      // The first push lists the (new, empty) remote, page by page, and says so.
      listing |= n["params"]["value"].value("message", "") == "listing the remote: 0 entries";
    }
  BOOST_TEST(begun);
  BOOST_TEST(ended);
  BOOST_TEST(listing);

  // A burst of saves (absolute and relative paths), then flush: all on the remote.
  write_file(project / "a.py", "a2\n");
  write_file(project / "pkg/b.py", "b2\n");
  c.notify("sync/fileSaved", {{"path", (project / "a.py").string()}});
  c.notify("sync/fileSaved", {{"uri", "file://" + (project / "pkg/b.py").string()}});
  json flush = c.call(3, "sync/flush");
  BOOST_REQUIRE_MESSAGE(flush.contains("result"), flush.dump());
  BOOST_TEST(read_file(remote / "a.py") == "a2\n");
  BOOST_TEST(read_file(remote / "pkg/b.py") == "b2\n");
  BOOST_TEST(flush["result"]["filesSent"] == 0);  // the saves already carried both files

  json status = c.call(4, "sync/status");
  BOOST_REQUIRE(status.contains("result"));
  BOOST_TEST(status["result"]["pendingSaves"].empty());
  BOOST_TEST(status["result"]["lastSync"].is_object());

  write_file(remote / "out/log.txt", "epoch 1\n");
  json pull = c.call(5, "sync/pull", {{"paths", {"out"}}});
  BOOST_REQUIRE_MESSAGE(pull.contains("result"), pull.dump());
  BOOST_TEST(pull["result"]["filesSent"] == 1);
  BOOST_TEST(read_file(project / "out/log.txt") == "epoch 1\n");

  json bad = c.call(6, "sync/push", {{"delete", "everything"}});
  BOOST_REQUIRE(bad.contains("error"));
  BOOST_TEST(bad["error"]["code"] == -32602);
  json bad_pull = c.call(7, "sync/pull", {{"paths", json::array()}});
  BOOST_TEST(bad_pull["error"]["code"] == -32602);

  c.call(8, "shutdown", nullptr);
  c.notify("exit", nullptr);
}
