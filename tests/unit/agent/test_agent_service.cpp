// The agent's methods in-process, and the ferry-agent binary fed raw bytes: bad CBOR is answered
// with an error and the agent goes on; a broken frame header ends it; EOF ends it cleanly.
#define BOOST_TEST_MODULE agent_service
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "ferry/version.hpp"
#include "helper/remote/byte_stream.hpp"
#include "helper/remote/child_process.hpp"
#include "protocol/agent_wire.hpp"
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

Response ask(ferry::agent::AgentService& s, std::string method, json params) {
  auto r = s.handle(Request{1, std::move(method), std::move(params)});
  BOOST_REQUIRE(r.has_value());
  return *r;
}

// The real binary on pipes, read frame by frame with a deadline.
struct AgentProcess {
  ferry::remote::ChildProcess child;
  std::unique_ptr<ferry::remote::FdStream> stream;
  FrameDecoder decoder{agent_frame_limits()};
  std::string magic;

  explicit AgentProcess(const fs::path& root) {
    auto s = child.spawn({FERRY_AGENT_PATH, "--root", root.string()});
    BOOST_REQUIRE(s.has_value());
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
  ferry::agent::AgentService s(*ferry::agent::RootPath::open(t.path));
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
  ferry::agent::AgentService s(*ferry::agent::RootPath::open(t.path));
  auto pong = ask(s, "agent/ping", {{"echo", json::binary({1, 2, 3})}});
  BOOST_TEST(std::get<json>(pong.outcome)["echo"] == json::binary({1, 2, 3}));
  for (json bad : {json{{"delayMs", -1}}, json{{"delayMs", ferry::agent::kMaxPingDelayMs + 1}}, json{{"delayMs", "1"}}})
    BOOST_TEST(std::get<ResponseError>(ask(s, "agent/ping", bad).outcome).code == error_code::kInvalidParams);
  BOOST_TEST(std::get<ResponseError>(ask(s, "fs/stat", json::object()).outcome).code == error_code::kInvalidParams);
  BOOST_TEST(std::get<ResponseError>(ask(s, "fs/stat", {{"path", "/etc"}}).outcome).code == error_code::kInvalidParams);
  BOOST_TEST(!s.handle(Notification{"$/cancelRequest", {{"id", 1}}}).has_value());  // no reply to notifications
  BOOST_TEST(!s.shutdown_requested());
  BOOST_TEST(ask(s, "agent/shutdown", nullptr).ok());
  BOOST_TEST(s.shutdown_requested());
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
