// ferry against a real old box: Debian 11 (glibc 2.31, Ubuntu 20.04's) in a chroot with its own
// OpenSSH 8.4 sshd on 127.0.0.1 (old_box_fixture). Through the real `ferry` CLI: connect installs
// the agent, sync lands a tree and then one edit, a run on the box's python3 streams its lines and
// its exit status across a cut SSH link, pull brings back what it wrote, a tunnel reaches a server
// started on the box. One box for the whole suite (each start copies ~270 MB).
#define BOOST_TEST_MODULE old_box
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/integration/old_box_fixture.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/ferry_process.hpp"
#include "tests/support/loopback_port.hpp"
#include "tests/support/tcp_peers.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ferry::test::OldBox;

namespace {

// This build's ferry as a child (tests/support/ferry_process.hpp).
struct Ferry : ferry::test::FerryProcess {
  Ferry(const fs::path& cwd, const std::vector<std::string>& args) : FerryProcess(FERRY_BIN, cwd, args) {}
};

// The exit status, stdout and stderr of a ferry command that ends by itself.
struct Done {
  int status;
  std::string out, err;
};
Done ferry_done(const fs::path& cwd, const std::vector<std::string>& args) {
  Ferry f(cwd, args);
  const int status = f.wait(120s);
  return {status, f.out(), f.err()};
}

// One box and one project pointing at it (ferry.json names the box's ssh config), shared by the
// suite's cases in order: what sync puts there, the run uses; what the run writes, pull fetches.
struct Shared {
  std::unique_ptr<OldBox> box;
  std::unique_ptr<ferry::test::TempDir> project;
  fs::path remote() const { return box->home() / "proj"; }
};
Shared* shared = nullptr;

struct BoxSuite {
  Shared s;
  BoxSuite() {
    s.box = std::make_unique<OldBox>();
    BOOST_TEST_MESSAGE("old box up in " << s.box->start_ms() << " ms (copy and mounts " << s.box->copy_ms() << " ms)");
    s.project = std::make_unique<ferry::test::TempDir>("ferry-old-box-project");
    ferry::test::write_file(*s.project / "ferry.json",
                            nlohmann::json{{"name", "oldbox"},
                                           {"host", s.box->alias()},
                                           {"sshConfig", s.box->ssh_config().string()},
                                           {"interpreter", "/usr/bin/python3 -u"},
                                           {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}}
                                .dump());
    shared = &s;
  }
  ~BoxSuite() { shared = nullptr; }
};

std::string pattern(std::size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>((seed = seed * 1103515245u + 12345u) >> 16);
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_missing_root_fails_naming_the_script_that_builds_it) {
  ferry::test::TempDir empty("ferry-old-box-none");
  try {
    OldBox box({.cached_root = empty / "bullseye"});
    BOOST_FAIL("a box started without its root");
  } catch (const std::runtime_error& e) {
    BOOST_TEST(std::string(e.what()).find("scripts/old_box_root.sh") != std::string::npos, e.what());
  }
}

BOOST_AUTO_TEST_SUITE(on_a_debian_11_box, *boost::unit_test::fixture<BoxSuite>())

BOOST_AUTO_TEST_CASE(connect_installs_the_agent_and_doctor_sees_glibc_2_31) {
  const auto& p = *shared->project;
  const auto connected = ferry_done(p.path(), {"connect", "--json"});
  BOOST_REQUIRE_MESSAGE(connected.status == 0, connected.out + connected.err);
  const auto j = nlohmann::json::parse(connected.out.substr(connected.out.find('{')));
  BOOST_TEST(j["ok"] == true);
  BOOST_TEST(j["agent"]["installed"] == true, j.dump());
  BOOST_TEST(j["arch"] == "x86_64", j.dump());
  BOOST_TEST(j["root"] == "/root/proj", j.dump());
  BOOST_TEST(j["hostKey"]["fingerprint"] == shared->box->host_key_fingerprint(), j.dump());
  // The agent was uploaded into the box's root's home, and answers from there.
  BOOST_TEST(fs::exists(shared->box->home() / ".cache/ferry/agent"));

  const auto doctor = ferry_done(p.path(), {"doctor", "--json"});
  BOOST_REQUIRE_MESSAGE(doctor.out.find('{') != std::string::npos, doctor.out + doctor.err);
  const auto d = nlohmann::json::parse(doctor.out.substr(doctor.out.find('{')));
  std::map<std::string, std::string> detail;
  for (const auto& c : d["checks"]) detail[c["check"]] = c["status"].get<std::string>() + ": " + c["detail"].get<std::string>();
  BOOST_TEST(detail["agent"].rfind("pass", 0) == 0u, doctor.out);
  BOOST_TEST(detail["system"].find("glibc 2.31") != std::string::npos, doctor.out);
}

BOOST_AUTO_TEST_CASE(sync_lands_the_tree_and_an_edit_moves_one_file) {
  const auto& p = *shared->project;
  ferry::test::write_file(p / "notes.txt", "old boxes still train models\n");
  ferry::test::write_file(p / "data/blob.bin", pattern(300000, 7));
  ferry::test::write_file(p / "src/lines.py", "print('first version')\n");
  const auto first = ferry_done(p.path(), {"sync", "--json"});
  BOOST_REQUIRE_MESSAGE(first.status == 0, first.out + first.err);
  const auto remote = shared->remote();
  for (const char* f : {"notes.txt", "data/blob.bin", "src/lines.py"})
    BOOST_TEST(ferry::test::read_file(remote / f) == ferry::test::read_file(p / f), f);
  struct stat before_notes{}, before_blob{};
  BOOST_REQUIRE(::stat((remote / "notes.txt").c_str(), &before_notes) == 0);
  BOOST_REQUIRE(::stat((remote / "data/blob.bin").c_str(), &before_blob) == 0);

  ferry::test::write_file(p / "src/lines.py", "print('second version, a little longer')\n");
  const auto second = ferry_done(p.path(), {"sync", "--json"});
  BOOST_REQUIRE_MESSAGE(second.status == 0, second.out + second.err);
  const auto j = nlohmann::json::parse(second.out.substr(second.out.find('{')));
  BOOST_TEST(j["filesSent"] == 1, second.out);
  BOOST_TEST(ferry::test::read_file(remote / "src/lines.py") == "print('second version, a little longer')\n");
  // The untouched files were not rewritten (a rewrite lands as a new inode by rename).
  struct stat after_notes{}, after_blob{};
  BOOST_REQUIRE(::stat((remote / "notes.txt").c_str(), &after_notes) == 0);
  BOOST_REQUIRE(::stat((remote / "data/blob.bin").c_str(), &after_blob) == 0);
  BOOST_TEST(after_notes.st_ino == before_notes.st_ino);
  BOOST_TEST(after_blob.st_ino == before_blob.st_ino);
}

// The run writes lines, waits on a FIFO the test holds while the box's sshd sessions are killed
// (the link dies, the run does not), then writes more and exits 7: ferry reconnects, resumes the
// output at the next byte and exits with the box's status.
BOOST_AUTO_TEST_CASE(a_run_streams_and_exits_with_its_status_across_a_cut_link_and_pull_fetches_its_file) {
  const auto& p = *shared->project;
  ferry::test::write_file(p / "job.py",
                          "import os, sys\n"
                          "for i in range(3): print('before', i)\n"
                          "os.makedirs('out', exist_ok=True)\n"
                          "open('out/result.txt', 'w').write('python %d.%d, %s\\n' % (sys.version_info[0], sys.version_info[1], "
                          "os.confstr('CS_GNU_LIBC_VERSION')))\n"
                          "with open('gate') as g: g.read()\n"
                          "for i in range(3): print('after', i)\n"
                          "print('to stderr', file=sys.stderr)\n"
                          "sys.exit(7)\n");
  fs::create_directories(shared->remote());  // so a run that cannot connect fails on its own line
  BOOST_REQUIRE(::mkfifo((shared->remote() / "gate").c_str(), 0600) == 0);

  Ferry run(p.path(), {"run", "--", "job.py"});
  BOOST_REQUIRE_MESSAGE(run.wait_out("before 2\n", 60s), run.out() + run.err());
  BOOST_TEST(run.out() == "before 0\nbefore 1\nbefore 2\n");  // streamed while the run waits
  shared->box->cut_sessions();
  BOOST_REQUIRE_MESSAGE(run.wait_out("lost the connection", 30s, true), run.err());
  {
    const int gate = ::open((shared->remote() / "gate").c_str(), O_WRONLY);  // blocks until the run reads
    BOOST_REQUIRE(gate >= 0);
    ::close(gate);
  }
  BOOST_TEST(run.wait(120s) == 7, run.err());
  BOOST_TEST_MESSAGE("ferry run's stderr across the cut:\n" << run.err());
  BOOST_TEST(run.out() == "before 0\nbefore 1\nbefore 2\nafter 0\nafter 1\nafter 2\n");
  BOOST_TEST(run.err().find("to stderr\n") != std::string::npos, run.err());
  BOOST_TEST(run.err().find("reconnected") != std::string::npos, run.err());

  const auto pulled = ferry_done(p.path(), {"pull", "out/result.txt"});
  BOOST_REQUIRE_MESSAGE(pulled.status == 0, pulled.out + pulled.err);
  BOOST_TEST(ferry::test::read_file(p / "out/result.txt") == "python 3.9, glibc 2.31\n");
  BOOST_TEST(ferry::test::read_file(p / "out/result.txt") == ferry::test::read_file(shared->remote() / "out/result.txt"));
}

namespace {

// One HTTP/1.0 GET through 127.0.0.1:port; the whole response ("" when the connect fails).
std::string http_get(int port, const std::string& path) {
  const int fd = ferry::test::tcp_connect("127.0.0.1", port);
  if (fd < 0) return "";
  ferry::test::write_all_fd(fd, "GET " + path + " HTTP/1.0\r\nHost: box\r\n\r\n");
  std::string response = ferry::test::read_to_eof(fd, 30s);
  ::close(fd);
  return response;
}

// The local port `ferry tunnel` announces ("127.0.0.1:PORT → remote ..."), 0 if it never does.
int announced_port(Ferry& tunnel) {
  if (!tunnel.wait_out("\n", 60s)) return 0;
  std::smatch m;
  const std::string out = tunnel.out();
  return std::regex_search(out, m, std::regex(R"(^127\.0\.0\.1:(\d+) )")) ? std::stoi(m[1].str()) : 0;
}

}  // namespace

// A web server started on the box by `ferry run --detach` (the box's python3, in the chroot)
// serves the synced tree; `ferry tunnel` brings it here.
BOOST_AUTO_TEST_CASE(a_tunnel_reaches_a_server_running_on_the_box) {
  const auto& p = *shared->project;
  const int box_port = ferry::test::free_loopback_port();
  const auto started =
      ferry_done(p.path(), {"run", "--detach", "--", "-m", "http.server", std::to_string(box_port), "--bind", "127.0.0.1"});
  BOOST_REQUIRE_MESSAGE(started.status == 0, started.out + started.err);
  const std::string id = started.out.substr(0, started.out.find('\n'));
  BOOST_REQUIRE(ferry::test::wait_for_port(box_port, 30s));

  Ferry tunnel(p.path(), {"tunnel", "0:127.0.0.1:" + std::to_string(box_port)});
  const int here = announced_port(tunnel);
  BOOST_REQUIRE_MESSAGE(here > 0, tunnel.out() + tunnel.err());
  const std::string response = http_get(here, "/data/blob.bin");
  BOOST_TEST(response.rfind("HTTP/1.0 200", 0) == 0u, response.substr(0, 200));
  const auto body = response.find("\r\n\r\n");
  BOOST_REQUIRE(body != std::string::npos);
  BOOST_TEST((response.substr(body + 4) == pattern(300000, 7)));
  tunnel.signal(SIGINT);
  BOOST_TEST(tunnel.wait(30s) == 0, tunnel.err());

  const auto killed = ferry_done(p.path(), {"kill", id});
  BOOST_TEST(killed.status == 0, killed.out + killed.err);
}

BOOST_AUTO_TEST_SUITE_END()
