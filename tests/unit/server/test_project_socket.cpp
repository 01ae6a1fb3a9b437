// helper/server/project_socket.hpp: where a project's live server listens (the user's runtime
// directory, 0700; the socket 0600; one name per project root), one listener per path (a dead
// one's socket replaced), and a peer of another uid dropped before it is served.
#define BOOST_TEST_MODULE project_socket
#include <boost/test/unit_test.hpp>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>

#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "helper/server/project_socket.hpp"
#include "helper/server/socket_client.hpp"
#include "protocol/framing.hpp"
#include "tests/support/ferry_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ferry::server::ProjectSocket;

namespace {

struct RuntimeDir {
  ferry::test::TempDir dir{"ferry-runtime"};
  RuntimeDir() { ::setenv("XDG_RUNTIME_DIR", dir.path().c_str(), 1); }
  ~RuntimeDir() { ::unsetenv("XDG_RUNTIME_DIR"); }
};

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  ::lstat(p.c_str(), &st);
  return st.st_mode & 0777;
}

// Echoes one line back.
ProjectSocket::Serve echo(std::atomic<int>& served) {
  return [&served](int fd) {
    ++served;
    char buf[64];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) [[maybe_unused]] auto w = ::write(fd, buf, static_cast<std::size_t>(n));
  };
}

}  // namespace

BOOST_AUTO_TEST_CASE(one_private_socket_per_project_root) {
  RuntimeDir runtime;
  auto a = ferry::server::project_socket_path("/work/a");
  auto b = ferry::server::project_socket_path("/work/b");
  BOOST_REQUIRE(a.has_value());
  BOOST_REQUIRE(b.has_value());
  BOOST_TEST(*a != *b);
  BOOST_TEST((*a == *ferry::server::project_socket_path("/work/a")));
  BOOST_TEST(a->parent_path() == runtime.dir.path() / "ferry");
  BOOST_TEST(mode_of(a->parent_path()) == 0700u);

  std::atomic<int> served{0};
  BOOST_TEST(!ferry::server::connect_project_socket(*a).value().has_value());  // nobody listens yet
  auto first = ProjectSocket::listen(*a, echo(served));
  BOOST_REQUIRE_MESSAGE(first.has_value(), (first ? std::string() : first.error()));
  BOOST_TEST(mode_of(*a) == 0600u);
  auto second = ProjectSocket::listen(*a, echo(served));
  BOOST_REQUIRE(!second.has_value());
  BOOST_TEST(second.error().find("another ferry serve listens") != std::string::npos, second.error());

  auto fd = ferry::server::connect_project_socket(*a);
  BOOST_REQUIRE(fd.has_value() && fd->has_value());
  BOOST_REQUIRE(::write(**fd, "ping\n", 5) == 5);
  char buf[8] = {};
  BOOST_TEST(::read(**fd, buf, sizeof buf) == 5);
  BOOST_TEST(std::string(buf, 5) == "ping\n");
  ::close(**fd);
  first->reset();
  BOOST_TEST(!fs::exists(*a));  // a server that ends removes its socket
}

// An editor's server lives for hours and serves many commands: the threads of connections that
// ended do not pile up.
BOOST_AUTO_TEST_CASE(ended_connections_leave_no_thread_behind) {
  RuntimeDir runtime;
  auto path = ferry::server::project_socket_path("/work/many");
  BOOST_REQUIRE(path.has_value());
  std::atomic<int> served{0};
  auto live = ProjectSocket::listen(*path, echo(served));
  BOOST_REQUIRE(live.has_value());
  auto threads = [] {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& t : fs::directory_iterator("/proc/self/task")) ++n;
    return n;
  };
  auto one = [&] {
    auto fd = ferry::server::connect_project_socket(*path);
    BOOST_REQUIRE(fd.has_value() && fd->has_value());
    BOOST_REQUIRE(::write(**fd, "x\n", 2) == 2);
    char buf[4];
    BOOST_REQUIRE(::read(**fd, buf, sizeof buf) == 2);
    ::close(**fd);
  };
  one();
  const std::size_t before = threads();
  for (int i = 0; i < 40; ++i) one();
  BOOST_TEST(ferry::test::eventually([&] { one(); return threads() <= before + 2; }, 10s), threads() << " threads, " << before << " before");
  BOOST_TEST(served.load() >= 42);
}

BOOST_AUTO_TEST_CASE(a_dead_servers_socket_is_replaced) {
  RuntimeDir runtime;
  auto path = ferry::server::project_socket_path("/work/crashed");
  BOOST_REQUIRE(path.has_value());
  // A socket file nobody accepts on: what a server killed with SIGKILL leaves.
  int dead = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path->c_str());
  BOOST_REQUIRE(::bind(dead, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  ::close(dead);
  BOOST_REQUIRE(fs::exists(*path));
  BOOST_TEST(!ferry::server::connect_project_socket(*path).value().has_value());
  std::atomic<int> served{0};
  auto live = ProjectSocket::listen(*path, echo(served));
  BOOST_REQUIRE_MESSAGE(live.has_value(), (live ? std::string() : live.error()));
  auto fd = ferry::server::connect_project_socket(*path);
  BOOST_REQUIRE(fd.has_value() && fd->has_value());
  ::close(**fd);
}

BOOST_AUTO_TEST_CASE(another_users_process_is_refused) {
  BOOST_REQUIRE_MESSAGE(::geteuid() == 0, "this test changes its child's uid: run it as root (CI does)");
  RuntimeDir runtime;
  auto path = ferry::server::project_socket_path("/work/shared");
  BOOST_REQUIRE(path.has_value());
  std::atomic<int> served{0};
  auto live = ProjectSocket::listen(*path, echo(served));
  BOOST_REQUIRE(live.has_value());
  // Modes opened up as a careless admin might: only the peer's uid is left to stop it.
  ::chmod(runtime.dir.path().c_str(), 0755);
  ::chmod(path->parent_path().c_str(), 0755);
  ::chmod(path->c_str(), 0666);
  const pid_t child = ::fork();
  if (child == 0) {
    ::signal(SIGPIPE, SIG_IGN);  // the server may have closed on it before the write
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(10);
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path->c_str());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) ::_exit(11);
    [[maybe_unused]] auto w = ::write(fd, "ping\n", 5);
    char buf[8];
    ::_exit(::read(fd, buf, sizeof buf) <= 0 ? 0 : 12);  // closed on it (EOF or reset), nothing echoed
  }
  int status = 0;
  BOOST_REQUIRE(::waitpid(child, &status, 0) == child);
  BOOST_TEST(WIFEXITED(status));
  BOOST_TEST(WEXITSTATUS(status) == 0);
  BOOST_TEST((*live)->refused() == 1);
  BOOST_TEST(served.load() == 0);
}

namespace {

// A live ferry of another build on the project's socket: answers ferry/hello (as a daemon or an
// editor's server) and ferry/stop, recording what it was asked; `stopped` is called on ferry/stop.
std::unique_ptr<ProjectSocket> other_build(const fs::path& socket, bool daemon, std::mutex& mu, std::vector<std::string>& asked,
                                           std::function<void()> stopped = {}) {
  auto fake = ProjectSocket::listen(socket, [&mu, &asked, daemon, stopped](int fd) {
    ferry::protocol::FrameDecoder frames;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) {
      frames.feed(std::string_view(buf, static_cast<std::size_t>(n)));
      while (auto body = frames.next()) {
        if (!body->has_value()) return;
        auto m = nlohmann::json::parse(**body);
        const std::string method = m.value("method", "");
        {
          std::lock_guard lock(mu);
          asked.push_back(method);
        }
        nlohmann::json result{{"version", "0.0.1 (commit 000000000000)"}, {"pid", 1}, {"linked", true}, {"endpoint", "fake"}, {"daemon", daemon}};
        if (method == "ferry/stop") result = {{"stopping", true}, {"pid", 1}};
        const std::string frame = ferry::protocol::encode_frame(nlohmann::json{{"jsonrpc", "2.0"}, {"id", m["id"]}, {"result", result}}.dump());
        if (::write(fd, frame.data(), frame.size()) < 0) return;
        if (method == "ferry/stop" && stopped) stopped();
      }
    }
  });
  BOOST_REQUIRE(fake.has_value());
  return std::move(*fake);
}

fs::path local_project(const ferry::test::TempDir& dir) {
  ferry::test::write_file(dir / "ferry.json", R"({"name": "other", "host": "local", "mappings": [{"local": ".", "remote": "~/other"}]})");
  ferry::test::write_file(dir / "main.py", "print(1)\n");
  return fs::canonical(dir.path());
}

}  // namespace

// A live server of another build is never ridden: `ferry sync` asks it ferry/hello, sees another
// version, and syncs on its own (here the local host), sending it nothing more; an editor's server
// is left alone after (no daemon is started beside it).
BOOST_AUTO_TEST_CASE(a_server_of_another_build_is_not_ridden) {
  RuntimeDir runtime;
  ferry::test::TempDir cache("ferry-socket-cache");
  ::setenv("XDG_CACHE_HOME", cache.path().c_str(), 1);
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
  ferry::test::TempDir dir("ferry-socket-proj");
  const fs::path root = local_project(dir);
  auto path = ferry::server::project_socket_path(root);
  BOOST_REQUIRE(path.has_value());
  std::mutex mu;
  std::vector<std::string> asked;
  auto fake = other_build(*path, /*daemon=*/false, mu, asked);
  ferry::test::FerryProcess sync(FERRY_BIN, dir.path(), {"sync"});
  BOOST_TEST(sync.wait() == 0, sync.err());
  BOOST_TEST(sync.out().find("(local sandbox") != std::string::npos, sync.out());  // its own link
  std::lock_guard lock(mu);
  BOOST_TEST((asked == std::vector<std::string>{"ferry/hello", "ferry/hello"}));  // before the sync, and before leaving a daemon
  BOOST_TEST(!fs::exists(root / ".ferry/logs/daemon.log"));
  ::unsetenv("XDG_CACHE_HOME");
}

// A daemon of another build is replaced: after syncing on its own link, `ferry sync` asks it to
// stop, and once its socket is gone leaves a daemon of this build.
BOOST_AUTO_TEST_CASE(a_daemon_of_another_build_is_replaced) {
  RuntimeDir runtime;
  ferry::test::TempDir cache("ferry-socket-cache");
  ::setenv("XDG_CACHE_HOME", cache.path().c_str(), 1);
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
  ferry::test::TempDir dir("ferry-socket-proj");
  const fs::path root = local_project(dir);
  auto path = ferry::server::project_socket_path(root);
  BOOST_REQUIRE(path.has_value());
  std::mutex mu;
  std::vector<std::string> asked;
  std::unique_ptr<ProjectSocket> fake;
  std::jthread closer;
  fake = other_build(*path, /*daemon=*/true, mu, asked, [&] {
    closer = std::jthread([&] { fake.reset(); });  // as the old daemon exits: its socket goes
  });
  ferry::test::FerryProcess sync(FERRY_BIN, dir.path(), {"sync"});
  BOOST_TEST(sync.wait() == 0, sync.err());
  BOOST_TEST(sync.out().find("(local sandbox") != std::string::npos, sync.out());
  {
    std::lock_guard lock(mu);
    BOOST_TEST((asked == std::vector<std::string>{"ferry/hello", "ferry/hello", "ferry/hello", "ferry/stop"}));
  }
  std::optional<nlohmann::json> hello;
  BOOST_TEST(ferry::test::eventually([&] {
    auto client = ferry::server::SocketClient::connect(root);
    auto h = client ? client->call("ferry/hello", nlohmann::json::object(), {}, {}, std::chrono::seconds(5)) : std::unexpected(ferry::protocol::ResponseError{});
    if (h && h->value("linked", false)) hello = *h;
    return hello.has_value();
  }, std::chrono::seconds(30)));
  BOOST_REQUIRE(hello);
  BOOST_TEST(hello->value("daemon", false));
  BOOST_TEST(hello->value("version", "") != "0.0.1 (commit 000000000000)");
  ferry::test::FerryProcess stop(FERRY_BIN, dir.path(), {"daemon", "stop"});
  const int rc = stop.wait();
  BOOST_TEST(rc == 0, "rc " << rc << ": " << stop.out() << stop.err());
  ::unsetenv("XDG_CACHE_HOME");
}
