// helper/server: the worker pool drains, the output channel serialises and survives a dead
// peer, and the Server answers over real pipes (lifecycle, project/load walking up from cwd).
#define BOOST_TEST_MODULE server
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "helper/server/output_channel.hpp"
#include "helper/server/server.hpp"
#include "helper/server/worker_pool.hpp"
#include "protocol/framing.hpp"
#include "protocol/messages.hpp"

using namespace ferry;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    BOOST_REQUIRE(pipe(fds) == 0);
    r = fds[0];
    w = fds[1];
  }
  ~Pipe() {
    close_read();
    close_write();
  }
  void close_read() {
    if (r >= 0) close(r);
    r = -1;
  }
  void close_write() {
    if (w >= 0) close(w);
    w = -1;
  }
};

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

std::vector<json> decode_all(const std::string& bytes) {
  protocol::FrameDecoder d;
  d.feed(bytes);
  std::vector<json> out;
  while (auto f = d.next()) {
    BOOST_REQUIRE(f->has_value());
    out.push_back(json::parse(**f));
  }
  BOOST_TEST(!d.mid_frame());
  return out;
}

std::string frames(const std::vector<json>& messages) {
  std::string out;
  for (const auto& m : messages) out += protocol::encode_frame(m.dump());
  return out;
}

// Runs a Server over pipes: writes `input`, waits for `answers` messages, then closes its
// stdin. Returns the exit status and every message it wrote.
std::pair<int, std::vector<json>> serve(server::ServerOptions options, const std::string& input,
                                        std::size_t answers) {
  Pipe in, out;
  std::thread writer([&] {
    std::string_view rest = input;
    while (!rest.empty()) {
      ssize_t n = write(in.w, rest.data(), rest.size());
      if (n <= 0) break;
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
  });
  std::vector<json> messages;
  std::thread reader([&] {
    protocol::FrameDecoder d;
    bool closed = false;
    char buf[4096];
    for (;;) {
      if (!closed && messages.size() >= answers) {
        writer.join();
        in.close_write();
        closed = true;
      }
      ssize_t n = read(out.r, buf, sizeof buf);
      if (n <= 0) break;
      d.feed(std::string_view(buf, static_cast<std::size_t>(n)));
      while (auto f = d.next()) {
        BOOST_REQUIRE(f->has_value());
        messages.push_back(json::parse(**f));
      }
    }
    if (!closed) writer.join();
  });
  server::Server s(std::move(options));
  int code = s.run(in.r, out.w);
  out.close_write();
  reader.join();
  return {code, messages};
}

json request(int id, const std::string& method, json params = nullptr) {
  json j{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) j["params"] = params;
  return j;
}

json notification(const std::string& method) { return {{"jsonrpc", "2.0"}, {"method", method}}; }

}  // namespace

BOOST_AUTO_TEST_CASE(worker_pool_runs_every_task_before_stop_returns) {
  std::atomic<int> ran{0};
  server::WorkerPool pool(3);
  for (int i = 0; i < 200; ++i) pool.post([&] { ++ran; });
  pool.stop();
  BOOST_TEST(ran.load() == 200);
  pool.post([&] { ++ran; });  // after stop: runs on the caller
  BOOST_TEST(ran.load() == 201);
}

BOOST_AUTO_TEST_CASE(output_channel_corks_and_frames) {
  Pipe p;
  server::OutputChannel out(p.w, protocol::Encoding::json);
  out.cork();
  out.send(json{{"a", 1}});
  out.send(json{{"b", 2}});
  // Nothing written while corked: the pipe is empty (non-blocking read says EAGAIN).
  fcntl(p.r, F_SETFL, O_NONBLOCK);
  char c;
  BOOST_TEST(read(p.r, &c, 1) == -1);
  out.uncork();
  p.close_write();
  fcntl(p.r, F_SETFL, 0);
  auto msgs = decode_all(read_all(p.r));
  BOOST_REQUIRE_EQUAL(msgs.size(), 2u);
  BOOST_TEST(msgs[1]["b"] == 2);
}

BOOST_AUTO_TEST_CASE(output_channel_survives_a_closed_peer) {
  std::signal(SIGPIPE, SIG_IGN);
  Pipe p;
  p.close_read();
  server::OutputChannel out(p.w, protocol::Encoding::json);
  out.send(json{{"a", 1}});
  BOOST_TEST(out.broken());
  out.send(json{{"a", 2}});  // dropped quietly
}

BOOST_AUTO_TEST_CASE(server_over_pipes_lifecycle_and_exit_codes) {
  server::ServerOptions o;
  o.cwd = fs::temp_directory_path();
  auto [code, msgs] = serve(o, frames({request(1, "initialize", {{"capabilities", json::object()}}),
                                       request(2, "ferry/ping"), request(3, "shutdown"), notification("exit")}),
                              3);
  BOOST_TEST(code == 0);
  BOOST_REQUIRE_EQUAL(msgs.size(), 3u);
  BOOST_TEST(msgs[0]["result"]["serverInfo"]["name"] == "ferry");
  auto methods = msgs[0]["result"]["capabilities"]["experimental"]["methods"];
  BOOST_TEST((std::find(methods.begin(), methods.end(), "project/load") != methods.end()));
  BOOST_TEST(msgs[2]["result"].is_null());

  auto [code2, msgs2] = serve(o, frames({request(1, "initialize", {{"capabilities", json::object()}})}), 1);
  BOOST_TEST(code2 == 1);  // EOF without shutdown
  BOOST_TEST(msgs2.size() == 1u);
}

BOOST_AUTO_TEST_CASE(project_load_walks_up_from_the_cwd) {
  fs::path root = fs::temp_directory_path() / ("ferry-server-test-" + std::to_string(getpid()));
  fs::create_directories(root / "src" / "deep");
  std::ofstream(root / "ferry.json") << R"({"name":"walk","host":"local"})";
  server::ServerOptions o;
  o.cwd = root / "src" / "deep";
  auto [code, msgs] = serve(o, frames({request(1, "initialize", {{"capabilities", json::object()}}),
                                       request(2, "project/load"),
                                       request(3, "project/load", {{"path", "../../nope"}})}),
                              3);
  fs::remove_all(root);
  BOOST_TEST(code == 1);
  BOOST_REQUIRE_EQUAL(msgs.size(), 3u);
  // project/load runs on a worker: match responses by id.
  for (const auto& m : msgs) {
    if (m["id"] == 2) {
      BOOST_TEST(m["result"]["name"] == "walk");
      BOOST_TEST(m["result"]["root"] == root.string());
    }
    if (m["id"] == 3) BOOST_TEST(m["error"]["code"] == -32099);
  }
}

BOOST_AUTO_TEST_CASE(unreadable_frame_closes_with_1) {
  server::ServerOptions o;
  o.cwd = fs::temp_directory_path();
  auto [code, msgs] = serve(o, "garbage without a header end\r\n\r\n", 1);
  BOOST_TEST(code == 1);
  BOOST_REQUIRE_EQUAL(msgs.size(), 1u);
  BOOST_TEST(msgs[0]["error"]["code"] == -32700);
}

BOOST_AUTO_TEST_CASE(serve_stream_carries_cbor_without_lifecycle) {
  // The same transport and dispatcher serve the agent wire: CBOR bodies, no LSP lifecycle.
  protocol::BindingTable table;
  table.request<protocol::PingParams, protocol::PingResult>(
      protocol::method::kPing, [](const protocol::PingParams& p, protocol::CallContext&) {
        return std::expected<protocol::PingResult, protocol::ResponseError>(protocol::PingResult{p.payload});
      });
  Pipe in, out;
  json req{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "ferry/ping"}, {"params", {{"payload", json::binary({0, 1, 255})}}}};
  std::string input = protocol::encode_frame(protocol::encode_body(req, protocol::Encoding::cbor));
  BOOST_REQUIRE(write(in.w, input.data(), input.size()) == static_cast<ssize_t>(input.size()));
  in.close_write();
  server::TransportOptions options;
  options.encoding = protocol::Encoding::cbor;
  options.lsp_lifecycle = false;
  int code = server::serve_stream(table, in.r, out.w, options);
  out.close_write();
  BOOST_TEST(code == 1);  // EOF without shutdown
  protocol::FrameDecoder d;
  d.feed(read_all(out.r));
  auto f = d.next();
  BOOST_REQUIRE(f && f->has_value());
  auto reply = protocol::decode_body(**f, protocol::Encoding::cbor);
  BOOST_REQUIRE(reply.has_value());
  BOOST_TEST((*reply)["id"] == 1);
  BOOST_REQUIRE((*reply)["result"]["payload"].is_binary());
  BOOST_TEST((*reply)["result"]["payload"].get_binary().size() == 3u);
}
