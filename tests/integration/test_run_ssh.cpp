// `ferry run`, `attach`, `logs`, `runs` and `kill` as real processes against a real sshd and the
// real agent: stdout and stderr apart and exact (large, binary), exit codes and signals, env and
// cwd, Ctrl-C escalation, --tty, and a run that outlives its SSH link: the CLI reconnects and
// re-attaches with nothing lost or doubled, and a fresh `ferry attach` yields exactly the bytes
// the run wrote (by the sha256 the script computed on the box).
#define BOOST_TEST_MODULE run_ssh
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/ferry_process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

using ferry::test::SshdFixture;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

// This build's ferry as a child (tests/support/ferry_process.hpp).
struct Ferry : ferry::test::FerryProcess {
  Ferry(const fs::path& cwd, const std::vector<std::string>& args, bool stdin_pipe = false)
      : FerryProcess(FERRY_BIN, cwd, args, stdin_pipe) {}
};

// A project on the fixture's box: mapping "." -> ~/proj, the Debian python (it has hashlib).
struct Project {
  SshdFixture sshd;
  ferry::test::TempDir dir{"ferry-run-ssh"};
  Project() {
    sshd.trust_host_key();
    nlohmann::json cfg{{"name", "runs"},
                       {"host", sshd.alias()},
                       {"sshConfig", sshd.ssh_config().string()},
                       {"interpreter", "/usr/bin/python3 -u"},
                       {"env", {{"FROM_CONFIG", "yes"}, {"OVERRIDDEN", "config"}}},
                       {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}};
    ferry::test::write_file(dir / "ferry.json", cfg.dump());
  }
  fs::path remote() const { return sshd.home() / "proj"; }
  std::vector<nlohmann::json> runs() {
    Ferry f(dir.path(), {"runs", "--json"});
    BOOST_REQUIRE(f.wait() == 0);
    auto out = f.out();
    auto j = nlohmann::json::parse(out);
    return std::vector<nlohmann::json>(j.begin(), j.end());
  }
};

std::string pattern(std::size_t n, int seed) {
  std::string s(n, '\0');
  std::uint32_t x = 2463534242u + static_cast<std::uint32_t>(seed);
  for (auto& c : s) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x & 0xff);
  }
  return s;
}

std::string sha256_of(const std::string& bytes, const fs::path& scratch) {
  ferry::test::write_file(scratch, bytes);
  auto out = ferry::test::run_command("sha256sum '" + scratch.string() + "'");
  return out.substr(0, 64);
}

}  // namespace

BOOST_AUTO_TEST_CASE(streams_exit_codes_env_cwd_and_binary_output) {
  Project p;
  ferry::test::write_file(p.dir / "sub" / "show.py",
                          "import os, sys\n"
                          "print('cwd', os.getcwd())\n"
                          "print('env', os.environ['FROM_CONFIG'], os.environ['OVERRIDDEN'], os.environ['PYTHONPATH'])\n"
                          "print('warn 1', file=sys.stderr)\n"
                          "print('args', sys.argv[1:])\n"
                          "print('warn 2', file=sys.stderr)\n"
                          "sys.exit(7)\n");
  // The script runs from the synced tree with cwd sub/, config env overridden by --env.
  Ferry run(p.dir.path(), {"run", "--env", "OVERRIDDEN=cli", "--cwd", "sub", "--", "show.py", "a b", "c"});
  int rc = run.wait();
  BOOST_TEST(rc == 7, run.err());
  std::string root = p.remote().string();
  BOOST_TEST(run.out() == "cwd " + root + "/sub\nenv yes cli " + root + "\nargs ['a b', 'c']\n");
  BOOST_TEST(run.err().find("warn 1\nwarn 2\n") != std::string::npos, run.err());
  BOOST_TEST(run.err().find("synced") != std::string::npos);  // the sync ran first

  // 3 MiB of binary on stdout, 64 KiB + 1 on stderr: byte-exact on each stream.
  std::string big = pattern(3 << 20, 1), small = pattern((64 << 10) + 1, 2);
  ferry::test::write_file(p.dir / "big.bin", big);
  ferry::test::write_file(p.dir / "small.bin", small);
  Ferry cat(p.dir.path(), {"run", "--", "sh", "-c", "cat big.bin; cat small.bin >&2"});
  BOOST_TEST(cat.wait() == 0, cat.err().substr(0, 300));
  BOOST_TEST((cat.out() == big));
  BOOST_TEST(cat.err().size() >= small.size());
  BOOST_TEST((cat.err().substr(cat.err().size() - small.size()) == small));

  // A signal is 128+N; piped stdin is forwarded, then EOF.
  Ferry killed(p.dir.path(), {"run", "--no-sync", "--", "sh", "-c", "kill -KILL $$"});
  BOOST_TEST(killed.wait() == 137);
  Ferry piped(p.dir.path(), {"run", "--no-sync", "--", "tr", "a-z", "A-Z"}, true);
  piped.write_stdin("hello ");
  piped.write_stdin("ferry\n");
  piped.close_stdin();
  BOOST_TEST(piped.wait() == 0, piped.err());
  BOOST_TEST(piped.out() == "HELLO FERRY\n");

  // logs: the same bytes again, per stream; unknown ids exit 2.
  auto runs = p.runs();
  BOOST_REQUIRE(runs.size() >= 4u);
  std::string cat_id;
  for (const auto& r : runs)
    if (r["argv"].size() == 3 && r["argv"][2].get<std::string>().starts_with("cat big")) cat_id = r["id"];
  BOOST_REQUIRE(!cat_id.empty());
  Ferry logs(p.dir.path(), {"logs", cat_id});
  BOOST_TEST(logs.wait() == 0);
  BOOST_TEST((logs.out() == big));
  BOOST_TEST((logs.err() == small));
  Ferry errs(p.dir.path(), {"logs", cat_id, "--stderr-only"});
  BOOST_TEST(errs.wait() == 0);
  BOOST_TEST((errs.out() == small));
  Ferry unknown(p.dir.path(), {"attach", "20990101-000000-beef"});
  BOOST_TEST(unknown.wait() == 2);
  BOOST_TEST(unknown.err().find("20990101-000000-beef") != std::string::npos, unknown.err());
  Ferry table(p.dir.path(), {"runs"});
  BOOST_TEST(table.wait() == 0);
  BOOST_TEST(table.out().find("SIGKILL") != std::string::npos, table.out());
  BOOST_TEST(table.out().find(cat_id) != std::string::npos);
}

BOOST_AUTO_TEST_CASE(ctrl_c_escalates_int_term_kill) {
  Project p;
  // Ignores INT and TERM (saying so), so only the third Ctrl-C (KILL) ends it.
  ferry::test::write_file(p.dir / "stubborn.py",
                          "import signal, sys, time\n"
                          "def note(s, f): print('got', signal.Signals(s).name, flush=True)\n"
                          "signal.signal(signal.SIGINT, note)\n"
                          "signal.signal(signal.SIGTERM, note)\n"
                          "print('ready', flush=True)\n"
                          "while True: signal.pause()\n");
  Ferry run(p.dir.path(), {"run", "--", "stubborn.py"});
  BOOST_REQUIRE_MESSAGE(run.wait_out("ready\n"), run.err());
  run.signal(SIGINT);
  BOOST_REQUIRE_MESSAGE(run.wait_out("got SIGINT\n"), run.err());
  // The note follows run/signal's reply, which the run's own output can overtake: wait for it.
  BOOST_TEST(run.wait_out("press Ctrl-C again to send SIGTERM", 30s, true), run.err());
  run.signal(SIGINT);
  BOOST_REQUIRE_MESSAGE(run.wait_out("got SIGTERM\n"), run.err());
  run.signal(SIGINT);
  BOOST_TEST(run.wait() == 137, run.err());
  BOOST_TEST(run.err().find("sent SIGKILL to run") != std::string::npos, run.err());

  // ferry kill from another process; --detach returns the id at once.
  Ferry detached(p.dir.path(), {"run", "--detach", "--no-sync", "--", "stubborn.py"});
  BOOST_REQUIRE(detached.wait() == 0);
  std::string id = detached.out().substr(0, detached.out().find('\n'));
  BOOST_TEST(id.size() == 20u, id);
  Ferry attach(p.dir.path(), {"attach", id});
  BOOST_REQUIRE_MESSAGE(attach.wait_out("ready\n"), attach.err());
  Ferry kill(p.dir.path(), {"kill", id, "--signal", "USR1"});
  BOOST_TEST(kill.wait() == 0, kill.err());
  BOOST_TEST(attach.wait() == 128 + SIGUSR1);
  Ferry gone(p.dir.path(), {"kill", "20990101-000000-beef"});
  BOOST_TEST(gone.wait() == 2);
}

// PyCharm's Stop sends ferry SIGINT, and its second Stop (Kill) SIGKILL: ferry passes the first on
// and asks the agent to finish the job should ferry vanish before the run ends. Killed without a
// Ctrl-C first, ferry leaves the run going (as a dropped link does), and the next `ferry run` of
// the same command says so; `ferry runs` marks it.
BOOST_AUTO_TEST_CASE(an_ides_second_stop_ends_the_run_and_a_run_left_behind_is_named) {
  Project p;
  ferry::test::write_file(p.dir / "stubborn.py",
                          "import signal, time\n"
                          "signal.signal(signal.SIGINT, lambda s, f: print('got SIGINT', flush=True))\n"
                          "print('ready', flush=True)\n"
                          "while True: time.sleep(0.05)\n");
  auto entry_of = [&](const std::string& id) {
    for (const auto& r : p.runs())
      if (r["id"] == id) return r;
    return nlohmann::json::object();
  };
  auto newest_running = [&] {
    for (const auto& r : p.runs())
      if (r.value("state", "") == "running") return r["id"].get<std::string>();
    return std::string();
  };
  std::string stopped;
  {
    Ferry run(p.dir.path(), {"run", "--", "stubborn.py"});
    BOOST_REQUIRE_MESSAGE(run.wait_out("ready\n"), run.err());
    run.signal(SIGINT);
    BOOST_REQUIRE_MESSAGE(run.wait_out("got SIGINT\n"), run.err());
    BOOST_REQUIRE_MESSAGE(run.wait_out("press Ctrl-C again to send SIGTERM", 30s, true), run.err());
    stopped = newest_running();
    run.signal(SIGKILL);
    BOOST_TEST(run.wait() == -1);
  }
  BOOST_REQUIRE(!stopped.empty());
  BOOST_TEST(ferry::test::eventually([&] { return entry_of(stopped).value("state", "") == "exited"; }, 20s));
  BOOST_TEST(entry_of(stopped).value("signal", 0) == SIGKILL);

  std::string left;
  {
    Ferry run(p.dir.path(), {"run", "--", "stubborn.py"});
    BOOST_REQUIRE_MESSAGE(run.wait_out("ready\n"), run.err());
    left = newest_running();
    BOOST_TEST(entry_of(left).value("followed", false));
    run.signal(SIGKILL);
    run.wait();
  }
  BOOST_REQUIRE(ferry::test::eventually([&] { return entry_of(left).value("followed", true) == false; }, 20s));
  BOOST_TEST(entry_of(left)["state"] == "running");
  Ferry table(p.dir.path(), {"runs"});
  BOOST_TEST(table.wait() == 0);
  BOOST_TEST(table.out().find(left) != std::string::npos, table.out());
  BOOST_TEST(table.out().find("[nobody following]") != std::string::npos, table.out());
  Ferry again(p.dir.path(), {"run", "--no-sync", "--", "stubborn.py"});
  BOOST_REQUIRE_MESSAGE(again.wait_out("ready\n"), again.err());
  BOOST_TEST(again.err().find("run " + left + " (the same command, started ") != std::string::npos, again.err());
  BOOST_TEST(again.err().find("`ferry kill " + left + "` stops it") != std::string::npos, again.err());
  Ferry kill(p.dir.path(), {"kill", left, "--signal", "KILL"});
  BOOST_TEST(kill.wait() == 0, kill.err());
  again.signal(SIGINT);
  BOOST_REQUIRE(again.wait_out("got SIGINT\n"));
  again.signal(SIGINT);  // SIGTERM: Python's default ends it
  BOOST_TEST(again.wait() == 143, again.err());
}

BOOST_AUTO_TEST_CASE(sigterm_stops_following_and_the_run_goes_on) {
  Project p;
  ferry::test::write_file(p.dir / "ticks.py",
                          "import sys, time\n"
                          "print('ready', flush=True)\n"
                          "line = sys.stdin.readline()\n"
                          "print('read', line.strip(), flush=True)\n"
                          "time.sleep(600)\n");
  Ferry run(p.dir.path(), {"run", "--", "ticks.py"}, true);
  BOOST_REQUIRE_MESSAGE(run.wait_out("ready\n"), run.err());
  run.write_stdin("forwarded\n");  // stdin is a pipe here: forwarded while following
  BOOST_REQUIRE_MESSAGE(run.wait_out("read forwarded\n"), run.err());
  run.signal(SIGTERM);
  BOOST_TEST(run.wait() == 143, run.err());
  BOOST_TEST(run.err().find("stopped following run") != std::string::npos, run.err());
  std::string id;
  for (const auto& r : p.runs())
    if (r["argv"].back().get<std::string>().ends_with("ticks.py") && r.value("state", "") == "running") id = r["id"];
  BOOST_REQUIRE_MESSAGE(!id.empty(), "the run goes on after ferry stopped following it");
  Ferry kill(p.dir.path(), {"kill", id, "--signal", "KILL"});
  BOOST_TEST(kill.wait() == 0, kill.err());
}

BOOST_AUTO_TEST_CASE(tty_gives_the_run_a_terminal) {
  Project p;
  Ferry run(p.dir.path(),
            {"run", "--tty", "--", "-c", "import os, sys; print('tty', os.isatty(0), os.isatty(1)); print('line', input())"}, true);
  BOOST_REQUIRE_MESSAGE(run.wait_out("tty True True"), run.err());
  run.write_stdin("typed\n");
  BOOST_TEST(run.wait() == 0, run.err());
  BOOST_TEST(run.out().find("line typed") != std::string::npos, run.out());
  BOOST_TEST(run.err().find("warn") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_run_survives_a_dropped_link_and_resumes_exactly) {
  Project p;
  // Writes part one, then waits on a FIFO the test controls, then part two; records the sha256
  // of everything it wrote on the box.
  ferry::test::write_file(p.dir / "writer.py",
                          "import hashlib, os, sys\n"
                          "def pattern(n, seed):\n"
                          "    x = 2463534242 + seed; out = bytearray(n)\n"
                          "    for i in range(n):\n"
                          "        x ^= (x << 13) & 0xffffffff; x ^= x >> 17; x ^= (x << 5) & 0xffffffff; out[i] = x & 0xff\n"
                          "    return bytes(out)\n"
                          "one, two = pattern(300000, 3), pattern(500000, 4)\n"
                          "sys.stdout.buffer.write(one); sys.stdout.buffer.flush()\n"
                          "with open('gate') as g: g.read()\n"
                          "sys.stdout.buffer.write(two); sys.stdout.buffer.flush()\n"
                          "open('written.sha256', 'w').write(hashlib.sha256(one + two).hexdigest())\n");
  // The FIFO lives on the box (the fixture's home is on this machine).
  fs::create_directories(p.remote());
  BOOST_REQUIRE(::mkfifo((p.remote() / "gate").c_str(), 0600) == 0);

  Ferry run(p.dir.path(), {"run", "--", "writer.py"});
  BOOST_REQUIRE_MESSAGE(run.wait_out_size(300000, 60s), run.err());
  p.sshd.kill_all();  // the agent and the SSH session die; the supervisor is in its own session
  BOOST_REQUIRE_MESSAGE(run.wait_out("lost the connection", 30s, true), run.err());
  p.sshd.start();
  {
    int gate = ::open((p.remote() / "gate").c_str(), O_WRONLY);  // blocks until the script reads
    BOOST_REQUIRE(gate >= 0);
    ::close(gate);
  }
  int rc = run.wait(120s);
  BOOST_TEST(rc == 0, run.err());
  BOOST_TEST(run.err().find("reconnected") != std::string::npos, run.err());
  std::string written_hash = ferry::test::read_file(p.remote() / "written.sha256");
  BOOST_REQUIRE_EQUAL(written_hash.size(), 64u);
  // The live CLI: neither lost nor doubled across the reconnect.
  BOOST_TEST(run.out().size() == 800000u);
  BOOST_TEST(sha256_of(run.out(), p.dir / "live.out") == written_hash);

  auto runs = p.runs();
  BOOST_REQUIRE(!runs.empty());
  std::string id = runs.front()["id"];  // newest first
  BOOST_TEST(runs.front()["state"] == "exited");
  Ferry attach(p.dir.path(), {"attach", id});
  BOOST_TEST(attach.wait() == 0, attach.err());
  BOOST_TEST(sha256_of(attach.out(), p.dir / "attach.out") == written_hash);
}

namespace {

// ferry under a real pseudo-terminal (as in a terminal emulator), through `sh -c '...; stty -a'`
// so the terminal's modes after ferry exits can be checked.
struct PtyRun {
  pid_t pid = -1;
  int master = -1;
  std::string seen;
  PtyRun(const fs::path& cwd, const std::string& shell_command) {
    pid = ::forkpty(&master, nullptr, nullptr, nullptr);
    if (pid == 0) {
      if (::chdir(cwd.c_str()) != 0) ::_exit(126);
      ::execl("/bin/sh", "sh", "-c", shell_command.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
  }
  ~PtyRun() {
    if (master >= 0) ::close(master);
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      int st;
      ::waitpid(pid, &st, 0);
    }
  }
  // Reads the terminal until `what` shows up (or EOF / the deadline).
  bool wait_for(const std::string& what, std::chrono::milliseconds limit = 30s) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (seen.find(what) == std::string::npos) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{master, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      ssize_t n = ::read(master, buf, sizeof buf);
      if (n <= 0) return seen.find(what) != std::string::npos;
      seen.append(buf, static_cast<std::size_t>(n));
    }
    return true;
  }
  void type(const std::string& keys) { BOOST_REQUIRE(::write(master, keys.data(), keys.size()) == static_cast<ssize_t>(keys.size())); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(tty_on_a_real_terminal_forwards_keys_and_restores_the_mode) {
  Project p;
  std::string ferry = std::string("'") + FERRY_BIN + "'";
  // Ctrl-C typed in raw mode is a byte for the remote terminal: Python there gets the SIGINT.
  PtyRun t(p.dir.path(), ferry + " run --tty -- -c \"import os; print('ready', os.isatty(0)); print('got', input())\"; "
                         "echo status=$?; stty -a; " + ferry + " run --no-sync --tty -- -c "
                         "\"print('second', flush=True); input()\"; echo status2=$?");
  BOOST_REQUIRE_MESSAGE(t.wait_for("ready True"), t.seen);
  t.type("abc\r");
  BOOST_REQUIRE_MESSAGE(t.wait_for("status="), t.seen);
  BOOST_TEST(t.seen.find("got abc") != std::string::npos, t.seen);
  BOOST_TEST(t.seen.find("status=0") != std::string::npos, t.seen);
  BOOST_REQUIRE_MESSAGE(t.wait_for("second"), t.seen);
  // The local terminal was back in cooked mode between the two runs.
  auto stty = t.seen.substr(t.seen.find("status="));
  BOOST_TEST(stty.find("-icanon") == std::string::npos, stty);
  BOOST_TEST(stty.find(" icanon") != std::string::npos, stty);
  BOOST_TEST(stty.find(" echo ") != std::string::npos, stty);
  t.type("\x03");
  BOOST_REQUIRE_MESSAGE(t.wait_for("status2="), t.seen);
  BOOST_TEST(t.seen.find("KeyboardInterrupt") != std::string::npos, t.seen);
  bool interrupted = t.seen.find("status2=1") != std::string::npos || t.seen.find("status2=130") != std::string::npos;
  BOOST_TEST(interrupted, t.seen);
}
