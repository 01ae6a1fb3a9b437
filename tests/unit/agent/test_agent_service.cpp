// The agent's own methods in-process behind a real Dispatcher (as the agent serves them), and the
// ferry-agent binary fed raw bytes: bad CBOR is answered with an error and the agent goes on; a
// broken frame header ends it; EOF ends it cleanly; the codes of the one Dispatcher's answers
// (unknown method, bad params with their pointer, a source on a write) are the wire's.
#define BOOST_TEST_MODULE agent_service
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "ferry/version.hpp"
#include "helper/remote/byte_stream.hpp"
#include "helper/remote/child_process.hpp"
#include "protocol/agent_wire.hpp"
#include "protocol/binding_table.hpp"
#include "protocol/dispatcher.hpp"
#include "remote-runtime/agent/agent_service.hpp"

namespace fs = std::filesystem;
using namespace ferry::protocol;
using namespace std::chrono_literals;

namespace {

struct TempRoot {
  fs::path path;
  TempRoot() {
    std::string tmpl = (fs::temp_directory_path() / "ferry-agent-XXXXXX").string();
    path = fs::canonical(::mkdtemp(tmpl.data()));
  }
  ~TempRoot() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// AgentService's methods bound into a table and served by a Dispatcher on the agent's options;
// what it sends is collected.
struct InProcess {
  BindingTable table;
  ferry::agent::AgentService service;
  std::vector<json> sent;
  Dispatcher dispatcher;
  explicit InProcess(const fs::path& root)
      : service(*ferry::agent::RootPath::open(root)),
        dispatcher(table, hooks(), DispatcherOptions{Encoding::cbor, false}) {
    service.bind(table);
  }
  DispatcherHooks hooks() {
    DispatcherHooks h;
    h.send = [this](const json& m) { sent.push_back(m); };
    return h;
  }
};

Response ask(InProcess& s, std::string method, json params) {
  s.sent.clear();
  s.dispatcher.handle_value(to_json(Request{1, std::move(method), std::move(params)}));
  BOOST_REQUIRE(s.sent.size() == 1u);
  auto m = parse_message(s.sent[0]);
  BOOST_REQUIRE(m.has_value());
  return std::get<Response>(*m);
}

// The real binary on pipes, read frame by frame with a deadline.
struct AgentProcess {
  ferry::remote::ChildProcess child;
  std::unique_ptr<ferry::remote::FdStream> stream;
  FrameDecoder decoder{agent_frame_limits()};
  std::string magic;
  int to_agent = -1, from_agent = -1;  // our ends of its stdin and stdout pipes

  explicit AgentProcess(const fs::path& root) {
    auto s = child.spawn({FERRY_AGENT_PATH, "--root", root.string()});
    BOOST_REQUIRE(s.has_value());
    to_agent = s->stdin_fd;
    from_agent = s->stdout_fd;
    stream = std::make_unique<ferry::remote::FdStream>(s->stdout_fd, s->stdin_fd);
    std::string pre;
    while (true) {
      auto scan = scan_agent_preamble(pre);
      if (scan) {
        BOOST_REQUIRE(scan->has_value());
        magic = pre.substr(0, (*scan)->consumed);
        decoder.feed(std::string_view(pre).substr((*scan)->consumed));
        break;
      }
      char buf[256];
      auto r = stream->read_some(buf, std::chrono::steady_clock::now() + 10s);
      BOOST_REQUIRE(r.status == ferry::remote::ReadStatus::data);
      pre.append(buf, r.bytes);
    }
  }

  // The next reply, or nullopt at EOF.
  std::optional<Message> next() {
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (true) {
      if (auto body = decoder.next()) {
        BOOST_REQUIRE(body->has_value());
        auto m = decode_agent_body(**body);
        BOOST_REQUIRE(m.has_value());
        return *m;
      }
      char buf[4096];
      auto r = stream->read_some(buf, deadline);
      if (r.status == ferry::remote::ReadStatus::eof) return std::nullopt;
      BOOST_REQUIRE(r.status == ferry::remote::ReadStatus::data);
      decoder.feed(std::string_view(buf, r.bytes));
    }
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(hello_checks_the_protocol_version) {
  TempRoot t;
  InProcess s(t.path);
  auto ok = ask(s, "agent/hello", {{"protocolVersion", ferry::kAgentProtocolVersion}, {"helperVersion", "test"}});
  BOOST_REQUIRE(ok.ok());
  const json& info = std::get<json>(ok.outcome);
  BOOST_TEST(info["version"] == ferry::kVersion);
  BOOST_TEST(info["pid"] == static_cast<long long>(::getpid()));
  BOOST_TEST(info["root"] == t.path.string());
  auto old = ask(s, "agent/hello", {{"protocolVersion", ferry::kAgentProtocolVersion + 1}});
  BOOST_REQUIRE(!old.ok());
  const auto& e = std::get<ResponseError>(old.outcome);
  BOOST_TEST(e.code == error_code::kAgentVersionMismatch);
  BOOST_TEST(e.message == "agent speaks protocol " + std::to_string(ferry::kAgentProtocolVersion) +
                              ", this ferry speaks " + std::to_string(ferry::kAgentProtocolVersion + 1));
  auto bad = ask(s, "agent/hello", {{"protocolVersion", "one"}});
  BOOST_TEST(std::get<ResponseError>(bad.outcome).code == error_code::kInvalidParams);
}

BOOST_AUTO_TEST_CASE(ping_and_params_validation) {
  TempRoot t;
  InProcess s(t.path);
  auto pong = ask(s, "agent/ping", {{"echo", json::binary({1, 2, 3})}});
  BOOST_TEST(std::get<json>(pong.outcome)["echo"] == json::binary({1, 2, 3}));
  for (json bad : {json{{"delayMs", -1}}, json{{"delayMs", ferry::agent::kMaxPingDelayMs + 1}}, json{{"delayMs", "1"}}})
    BOOST_TEST(std::get<ResponseError>(ask(s, "agent/ping", bad).outcome).code == error_code::kInvalidParams);
  auto no_path = std::get<ResponseError>(ask(s, "fs/stat", json::object()).outcome);
  BOOST_TEST(no_path.code == error_code::kInvalidParams);
  BOOST_TEST(no_path.data.value_or(json())["pointer"] == "/path");
  BOOST_TEST(std::get<ResponseError>(ask(s, "fs/stat", {{"path", "/etc"}}).outcome).code == error_code::kInvalidParams);
  auto here = ask(s, "fs/stat", {{"path", "."}});
  BOOST_REQUIRE(here.ok());
  BOOST_TEST(std::get<json>(here.outcome)["type"] == "dir");
  BOOST_TEST(std::get<json>(ask(s, "fs/stat", {{"path", "nope"}}).outcome) == json({{"exists", false}, {"path", "nope"}}));
  s.sent.clear();
  s.dispatcher.handle_value(to_json(Notification{"$/cancelRequest", {{"id", 1}}}));
  BOOST_TEST(s.sent.empty());  // no reply to notifications
  BOOST_TEST(std::get<ResponseError>(ask(s, "agent/nope", nullptr).outcome).code == error_code::kMethodNotFound);
  BOOST_TEST(!s.service.shutdown_requested());
  BOOST_TEST(ask(s, "agent/shutdown", nullptr).ok());
  BOOST_TEST(s.service.shutdown_requested());
}

BOOST_AUTO_TEST_CASE(binary_answers_bad_cbor_and_carries_on) {
  TempRoot t;
  AgentProcess a(t.path / "root");
  BOOST_TEST(a.magic == "FERRY-AGENT " + std::to_string(ferry::kAgentProtocolVersion) + " " + ferry::kVersion + "\n");
  BOOST_REQUIRE(a.stream->write_all(encode_frame(std::string("\xff\x00 not cbor", 11))).has_value());
  auto err = a.next();
  BOOST_REQUIRE(err.has_value());
  const auto& resp = std::get<Response>(*err);
  BOOST_TEST(resp.id.is_null());
  BOOST_TEST(std::get<ResponseError>(resp.outcome).code == error_code::kParseError);
  // A well-formed CBOR non-message: answered by id.
  auto v = json::to_cbor(json{{"id", 5}, {"method", "agent/ping"}});
  BOOST_REQUIRE(a.stream->write_all(encode_frame(std::string(v.begin(), v.end()))).has_value());
  auto invalid = a.next();
  BOOST_REQUIRE(invalid.has_value());
  BOOST_TEST(std::get<Response>(*invalid).id == 5);
  // Still serving.
  BOOST_REQUIRE(a.stream->write_all(encode_agent_frame(Request{6, "agent/ping", {{"echo", "alive"}}})).has_value());
  auto pong = a.next();
  BOOST_REQUIRE(pong.has_value());
  BOOST_TEST(std::get<json>(std::get<Response>(*pong).outcome)["echo"] == "alive");
  // EOF: a clean exit.
  a.stream->close_write();
  BOOST_TEST(!a.next().has_value());
  auto status = a.child.wait_for(10s);
  BOOST_REQUIRE(status.has_value());
  BOOST_TEST(WIFEXITED(*status));
  BOOST_TEST(WEXITSTATUS(*status) == 0);
  BOOST_TEST(fs::is_directory(t.path / "root"));  // --root was created
}

// sshd's 64 KiB pipes made it hand a pushed chunk over in 64 KiB pieces: the agent widens
// both of its pipes before it says hello (up to what this machine lets a user have).
BOOST_AUTO_TEST_CASE(binary_widens_its_stdio_pipes) {
  TempRoot t;
  AgentProcess a(t.path);
  int most = 1 << 20;
  std::ifstream("/proc/sys/fs/pipe-max-size") >> most;
  const int want = ::geteuid() == 0 ? 1 << 20 : std::min(most, 1 << 20);  // root is not held to the maximum
  BOOST_TEST(::fcntl(a.to_agent, F_GETPIPE_SZ) == want);
  BOOST_TEST(::fcntl(a.from_agent, F_GETPIPE_SZ) == want);
  BOOST_REQUIRE(a.stream->write_all(encode_agent_frame(Request{1, "agent/ping", {{"echo", "wide"}}})).has_value());
  auto pong = a.next();
  BOOST_REQUIRE(pong.has_value());
  BOOST_TEST(std::get<json>(std::get<Response>(*pong).outcome)["echo"] == "wide");
}

// The wide pipes count against the user's pipe quota: after megabytes and a quiet second the
// agent narrows them back, and the next request widens them again.
BOOST_AUTO_TEST_CASE(binary_narrows_its_pipes_when_quiet_and_widens_them_for_the_next_request) {
  TempRoot t;
  AgentProcess a(t.path);
  int most = 1 << 20;
  std::ifstream("/proc/sys/fs/pipe-max-size") >> most;
  const int wide = ::geteuid() == 0 ? 1 << 20 : std::min(most, 1 << 20);
  const std::string big(3u << 20, 'x');
  BOOST_REQUIRE(a.stream->write_all(encode_agent_frame(Request{1, "agent/ping", {{"echo", big}}})).has_value());
  auto pong = a.next();
  BOOST_REQUIRE(pong.has_value());
  BOOST_TEST(std::get<json>(std::get<Response>(*pong).outcome)["echo"].get<std::string>().size() == big.size());
  // Quiet now: within its idle second (and some slack) both pipes go back to 64 KiB.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (::fcntl(a.to_agent, F_GETPIPE_SZ) != (64 << 10) && std::chrono::steady_clock::now() < deadline) {
    pollfd none{-1, 0, 0};
    ::poll(&none, 0, 20);  // waiting on the agent's own timer: nothing to wake us
  }
  BOOST_TEST(::fcntl(a.to_agent, F_GETPIPE_SZ) == (64 << 10));
  BOOST_TEST(::fcntl(a.from_agent, F_GETPIPE_SZ) == (64 << 10));
  BOOST_REQUIRE(a.stream->write_all(encode_agent_frame(Request{2, "agent/ping", {{"echo", "again"}}})).has_value());
  auto again = a.next();
  BOOST_REQUIRE(again.has_value());
  BOOST_TEST(std::get<json>(std::get<Response>(*again).outcome)["echo"] == "again");
  BOOST_TEST(::fcntl(a.to_agent, F_GETPIPE_SZ) == wide);
  BOOST_TEST(::fcntl(a.from_agent, F_GETPIPE_SZ) == wide);
}

// Every family behind the binary's one Dispatcher: the codes the helper relies on, and
// agent/shutdown answered before a clean exit.
BOOST_AUTO_TEST_CASE(binary_answers_every_family_through_one_dispatcher) {
  TempRoot t;
  AgentProcess a(t.path);
  auto call = [&](int id, const std::string& method, json params) {
    BOOST_REQUIRE(a.stream->write_all(encode_agent_frame(Request{id, method, std::move(params)})).has_value());
    auto m = a.next();
    BOOST_REQUIRE(m.has_value());
    auto& r = std::get<Response>(*m);
    BOOST_TEST(r.id == id);
    return r;
  };
  auto code = [](const Response& r) { return r.ok() ? 0 : std::get<ResponseError>(r.outcome).code; };
  BOOST_TEST(code(call(1, "nope/nothing", json::object())) == error_code::kMethodNotFound);
  BOOST_TEST(code(call(2, "sync/nothing", json::object())) == error_code::kMethodNotFound);
  auto bad = call(3, "fs/stat", {{"path", 7}});
  BOOST_TEST(code(bad) == error_code::kInvalidParams);
  BOOST_TEST(std::get<ResponseError>(bad.outcome).data.value_or(json())["pointer"] == "/path");
  // The read-only source check comes before the params are decoded (these are otherwise empty).
  auto source = call(4, "sync/writeBatch", {{"source", "python"}});
  BOOST_TEST(code(source) == error_code::kInvalidParams);
  BOOST_TEST(std::get<ResponseError>(source.outcome).message.find("read-only pull source") != std::string::npos);
  BOOST_TEST(code(call(5, "sync/state", json::object())) == 0);
  BOOST_TEST(code(call(6, "run/list", nullptr)) == 0);
  BOOST_TEST(code(call(7, "run/list", json::array({1}))) == error_code::kInvalidParams);
  BOOST_TEST(code(call(8, "autostop/status", nullptr)) == 0);
  BOOST_TEST(code(call(9, "spot/status", nullptr)) == 0);
  BOOST_TEST(code(call(10, "gpu/status", nullptr)) == 0);
  auto old = call(11, "agent/hello", {{"protocolVersion", ferry::kAgentProtocolVersion + 1}});
  BOOST_TEST(code(old) == error_code::kAgentVersionMismatch);
  BOOST_TEST(std::get<ResponseError>(old.outcome).data.value_or(json())["agentProtocolVersion"] == ferry::kAgentProtocolVersion);
  BOOST_TEST(code(call(12, "agent/shutdown", nullptr)) == 0);
  BOOST_TEST(!a.next().has_value());
  auto status = a.child.wait_for(10s);
  BOOST_REQUIRE(status.has_value());
  BOOST_TEST(WEXITSTATUS(*status) == 0);
}

BOOST_AUTO_TEST_CASE(binary_exits_on_an_unrecoverable_frame) {
  TempRoot t;
  AgentProcess a(t.path);
  BOOST_REQUIRE(a.stream->write_all("Content-Length: banana\r\n\r\n").has_value());
  auto err = a.next();
  BOOST_REQUIRE(err.has_value());
  BOOST_TEST(std::get<ResponseError>(std::get<Response>(*err).outcome).message.find("Content-Length") != std::string::npos);
  BOOST_TEST(!a.next().has_value());
  auto status = a.child.wait_for(10s);
  BOOST_REQUIRE(status.has_value());
  BOOST_TEST(WEXITSTATUS(*status) == 1);
}

BOOST_AUTO_TEST_CASE(binary_usage_errors) {
  BOOST_TEST(WEXITSTATUS(std::system(FERRY_AGENT_PATH " 2>/dev/null")) == 2);            // no --root
  BOOST_TEST(WEXITSTATUS(std::system(FERRY_AGENT_PATH " --bogus 2>/dev/null")) == 2);
  BOOST_TEST(WEXITSTATUS(std::system(FERRY_AGENT_PATH " --root /proc/nope/x 2>/dev/null </dev/null")) == 2);
  BOOST_TEST(WEXITSTATUS(std::system(FERRY_AGENT_PATH " --version >/dev/null")) == 0);
}
