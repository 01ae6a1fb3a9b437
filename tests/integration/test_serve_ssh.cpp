// `ferry serve` (the Server over real pipes) against a real sshd: host/connect by alias with a
// known host; an unknown host makes the server ask host/confirmHostKey (accept records the key,
// reject fails naming the fingerprint); an encrypted key is unlocked through host/passphrase;
// host/stateChanged reports the link; doctor/run returns the doctor's lines.
#define BOOST_TEST_MODULE serve_ssh
#include <boost/test/unit_test.hpp>

#include <poll.h>
#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "helper/server/server.hpp"
#include "protocol/framing.hpp"
#include "tests/integration/sshd_fixture.hpp"

using ferry::test::SshdFixture;
using json = nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// An IDE stand-in: runs the Server on a thread over two pipes and speaks to it frame by frame.
class Client {
 public:
  using Answer = std::function<json(const json& request)>;  // the result for a server request

  explicit Client(fs::path cwd) {
    int a[2], b[2];
    BOOST_REQUIRE(::pipe(a) == 0);
    BOOST_REQUIRE(::pipe(b) == 0);
    to_server_ = a[1];
    from_server_ = b[0];
    ferry::server::ServerOptions o;
    o.cwd = cwd;
    o.project_dir = cwd;
    server_ = std::thread([o, in = a[0], out = b[1]] {
      ferry::server::Server s(o);
      s.run(in, out);
      ::close(in);
      ::close(out);
    });
    auto init = call("initialize", {{"capabilities", json::object()}});
    methods_ = init["result"]["capabilities"]["methods"];
    send({{"jsonrpc", "2.0"}, {"method", "initialized"}, {"params", json::object()}});
  }
  ~Client() {
    send({{"jsonrpc", "2.0"}, {"id", "bye"}, {"method", "shutdown"}});
    send({{"jsonrpc", "2.0"}, {"method", "exit"}});
    ::close(to_server_);
    server_.join();
    ::close(from_server_);
  }

  const json& methods() const { return methods_; }

  // Sends a request and reads until its response, answering the server's own requests with
  // `answer` and keeping every notification and server request seen on the way.
  json call(const std::string& method, json params, const Answer& answer = {}, std::chrono::seconds limit = 60s) {
    const int id = next_id_++;
    send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}});
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      auto m = next(deadline);
      BOOST_REQUIRE_MESSAGE(m, "no response to " + method + " in time");
      if (m->contains("method") && m->contains("id")) {  // the server asks
        server_requests.push_back(*m);
        BOOST_REQUIRE_MESSAGE(answer, "unexpected server request " + m->dump());
        send({{"jsonrpc", "2.0"}, {"id", (*m)["id"]}, {"result", answer(*m)}});
      } else if (m->contains("method")) {
        notifications.push_back(*m);
      } else if ((*m)["id"] == id) {
        return *m;
      }
    }
  }

  // Reads until a notification matching `pred` arrives (or one already did); nullopt at the limit.
  std::optional<json> wait_notification(const std::function<bool(const json&)>& pred, std::chrono::seconds limit) {
    for (std::size_t i = seen_; i < notifications.size(); ++i)
      if (pred(notifications[i])) {
        seen_ = i + 1;
        return notifications[i];
      }
    seen_ = notifications.size();
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
      auto m = next(deadline);
      if (!m) return std::nullopt;
      if (!m->contains("method") || m->contains("id")) continue;
      notifications.push_back(*m);
      seen_ = notifications.size();
      if (pred(*m)) return m;
    }
  }

  std::vector<json> notifications;
  std::vector<json> server_requests;

 private:
  void send(const json& m) {
    std::string bytes = ferry::protocol::encode_frame(m.dump());
    std::string_view rest = bytes;
    while (!rest.empty()) {
      ssize_t n = ::write(to_server_, rest.data(), rest.size());
      if (n <= 0) return;
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  std::optional<json> next(std::chrono::steady_clock::time_point deadline) {
    for (;;) {
      if (auto f = decoder_.next()) {
        BOOST_REQUIRE(f->has_value());
        return json::parse(**f);
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{from_server_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      char buf[8192];
      ssize_t n = ::read(from_server_, buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    }
  }

  int to_server_ = -1, from_server_ = -1;
  std::thread server_;
  ferry::protocol::FrameDecoder decoder_;
  int next_id_ = 1;
  std::size_t seen_ = 0;  // notifications already offered to wait_notification
  json methods_;
};

void write_project(const SshdFixture& f, const std::string& host) {
  std::ofstream(f.dir() / "ferry.json") << json{{"name", "serve-ssh"},
                                                {"host", host},
                                                {"sshConfig", f.ssh_config().string()},
                                                {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}}
                                               .dump();
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct Env {
  Env() {
    ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
    ::unsetenv("SSH_AUTH_SOCK");  // only the fixture's keys
  }
};

bool has_state(const std::vector<json>& notes, const std::string& state) {
  for (const auto& n : notes)
    if (n["method"] == "host/stateChanged" && n["params"]["state"] == state) return true;
  return false;
}

}  // namespace

BOOST_GLOBAL_FIXTURE(Env);

BOOST_AUTO_TEST_CASE(connect_by_alias_to_a_known_host) {
  SshdFixture f;
  f.trust_host_key();
  write_project(f, f.alias());
  Client c(f.dir());
  for (const char* m : {"host/connect", "doctor/run", "host/confirmHostKey", "host/passphrase", "host/stateChanged"})
    BOOST_TEST((std::find(c.methods().begin(), c.methods().end(), m) != c.methods().end()), m);
  auto r = c.call("host/connect", json::object());
  BOOST_REQUIRE_MESSAGE(r.contains("result"), r.dump());
  BOOST_TEST(r["result"]["host"] == f.alias());
  BOOST_TEST(r["result"]["remoteRoot"] == (f.home() / "proj").string());
  BOOST_TEST(r["result"]["os"] == "Linux");
  BOOST_TEST(!r["result"]["agentVersion"].get<std::string>().empty());
  BOOST_TEST(r["result"]["protocolVersion"].get<int>() > 0);
  BOOST_TEST(c.server_requests.empty());
  BOOST_TEST(has_state(c.notifications, "connecting"));
  BOOST_TEST(has_state(c.notifications, "connected"));
}

BOOST_AUTO_TEST_CASE(state_changes_follow_the_link_through_a_reconnect) {
  SshdFixture f;
  f.trust_host_key();
  write_project(f, f.alias());
  Client c(f.dir());
  auto r = c.call("host/connect", json::object());
  BOOST_REQUIRE_MESSAGE(r.contains("result"), r.dump());
  auto state_is = [](const std::string& s) {
    return [s](const json& n) { return n["method"] == "host/stateChanged" && n["params"]["state"] == s; };
  };
  BOOST_REQUIRE(c.wait_notification(state_is("connected"), 1s));

  f.kill_all();  // the connection drops with the server: noticed at once
  auto dropped = c.wait_notification(state_is("reconnecting"), 15s);  // the drop itself, with its reason
  BOOST_REQUIRE(dropped);
  BOOST_TEST(!(*dropped)["params"]["message"].get<std::string>().empty());
  // sshd is down: the first attempt is refused and the next one scheduled after a delay.
  auto reconnecting = c.wait_notification(
      [](const json& n) { return n["method"] == "host/stateChanged" && n["params"].contains("attempt"); }, 15s);
  BOOST_REQUIRE(reconnecting);
  BOOST_TEST((*reconnecting)["params"]["state"] == "reconnecting");
  BOOST_TEST((*reconnecting)["params"]["host"] == f.alias());
  BOOST_TEST((*reconnecting)["params"]["attempt"].get<int>() >= 1, reconnecting->dump());
  BOOST_TEST((*reconnecting)["params"]["retryInMs"].get<long long>() > 0, reconnecting->dump());
  BOOST_TEST(!(*reconnecting)["params"]["message"].get<std::string>().empty());

  f.start();
  BOOST_TEST(c.wait_notification(state_is("connected"), 30s).has_value());
}

BOOST_AUTO_TEST_CASE(unknown_host_accepted_through_confirm_host_key) {
  SshdFixture f;
  write_project(f, f.alias());
  Client c(f.dir());
  auto r = c.call("host/connect", json::object(), [](const json&) { return json{{"accept", true}}; });
  BOOST_REQUIRE_MESSAGE(r.contains("result"), r.dump());
  BOOST_REQUIRE_EQUAL(c.server_requests.size(), 1u);
  const auto& ask = c.server_requests[0];
  BOOST_TEST(ask["method"] == "host/confirmHostKey");
  BOOST_TEST(ask["id"].get<std::string>().starts_with("srv-"));
  BOOST_TEST(ask["params"]["host"] == f.alias());
  BOOST_TEST(ask["params"]["keyType"] == "ssh-ed25519");
  BOOST_TEST(ask["params"]["fingerprint"] == f.host_key_fingerprint());
  BOOST_TEST(read_file(f.known_hosts()).find("[127.0.0.1]:" + std::to_string(f.port())) != std::string::npos);

  // Now known: a second connect asks nothing.
  auto again = c.call("host/connect", json::object());
  BOOST_TEST(again.contains("result"), again.dump());
}

BOOST_AUTO_TEST_CASE(unknown_host_rejected_names_the_fingerprint) {
  SshdFixture f;
  write_project(f, f.alias());
  Client c(f.dir());
  auto r = c.call("host/connect", json::object(), [](const json&) { return json{{"accept", false}}; });
  BOOST_REQUIRE_MESSAGE(r.contains("error"), r.dump());
  BOOST_TEST(r["error"]["message"].get<std::string>().find(f.host_key_fingerprint()) != std::string::npos, r.dump());
  BOOST_TEST(r["error"]["data"]["kind"] == "hostKeyRejected");
  BOOST_TEST(read_file(f.known_hosts()).empty());
}

BOOST_AUTO_TEST_CASE(encrypted_key_unlocked_through_passphrase) {
  SshdFixture f;
  f.trust_host_key();
  const fs::path key = f.dir() / "enc_ed25519";
  ferry::test::run_command("ssh-keygen -q -t ed25519 -N 'open sesame' -f '" + key.string() + "'");
  {
    std::ofstream(f.dir() / "authorized_keys", std::ios::app) << read_file(key.string() + ".pub");
  }
  f.add_client_config("Host ferry-enc\n  HostName 127.0.0.1\n  Port " + std::to_string(f.port()) + "\n  User " +
                      ::getpwuid(::getuid())->pw_name + "\n  IdentityFile " + key.string() +
                      "\n  IdentitiesOnly yes\n  UserKnownHostsFile " + f.known_hosts().string() +
                      "\n  GlobalKnownHostsFile none\n");
  write_project(f, "ferry-enc");
  Client c(f.dir());
  auto r = c.call("host/connect", json::object(), [&](const json& req) {
    BOOST_TEST(req["method"] == "host/passphrase");
    BOOST_TEST(req["params"]["keyFile"] == key.string());
    return json{{"passphrase", "open sesame"}};
  });
  BOOST_TEST(r.contains("result"), r.dump());
  BOOST_TEST(c.server_requests.size() == 1u);
}

BOOST_AUTO_TEST_CASE(doctor_run_returns_lines) {
  SshdFixture f;
  f.trust_host_key();
  write_project(f, f.alias());
  Client c(f.dir());
  auto r = c.call("doctor/run", json::object());
  BOOST_REQUIRE_MESSAGE(r.contains("result"), r.dump());
  BOOST_TEST(r["result"]["host"] == f.alias());
  const auto& checks = r["result"]["checks"];
  BOOST_REQUIRE(checks.size() > 3u);
  bool connection_passed = false;
  for (const auto& line : checks) {
    BOOST_TEST((line["status"] == "pass" || line["status"] == "warn" || line["status"] == "fail"));
    BOOST_TEST(line.contains("detail"));
    BOOST_TEST(line.contains("fix"));
    if (line["check"] == "connection" && line["status"] == "pass") connection_passed = true;
  }
  BOOST_TEST(connection_passed, checks.dump());

  auto local = c.call("doctor/run", {{"host", "local"}});
  BOOST_REQUIRE_MESSAGE(local.contains("result"), local.dump());
  BOOST_TEST(local["result"]["checks"][0]["status"] == "pass", local.dump());
}
