// The process launcher (common/process.hpp) on POSIX and, under Wine, on Windows, with a child of
// our own (process_helper.cpp, built beside this test): output captured from both pipes, the exit
// code, words reaching the child unchanged (no shell, Windows' quoting), the PATH search only when
// asked, the working directory, stdin on a pipe or the null device, waits with a timeout, signals,
// and a timeout that kills the child together with what it started (its process group; its job).
#define BOOST_TEST_MODULE process
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/process.hpp"
#include "tests/support/temp_dir.hpp"

#ifdef _WIN32
#include <windows.h>
#else
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#endif

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using ferry::platform::Process;
using ferry::platform::ProcessSpec;
using ferry::platform::run_captured;
using ferry::platform::Stdio;
using Clock = std::chrono::steady_clock;

namespace {

fs::path own_dir() {
#ifdef _WIN32
  wchar_t self[MAX_PATH];
  ::GetModuleFileNameW(nullptr, self, MAX_PATH);
  return fs::path(self).parent_path();
#else
  return fs::read_symlink("/proc/self/exe").parent_path();
#endif
}

std::string utf8(const fs::path& p) {
  const auto u8 = p.u8string();
  return {u8.begin(), u8.end()};
}

fs::path from_utf8(const std::string& s) { return fs::path(std::u8string(s.begin(), s.end())); }

#ifdef _WIN32
const std::string kHelperName = "process_helper.exe";
#else
const std::string kHelperName = "process_helper";
#endif

std::string helper() { return utf8(own_dir() / kHelperName); }

ProcessSpec spec_of(std::vector<std::string> argv, bool search_path = false, fs::path cwd = {}) {
  ProcessSpec s;
  s.argv = std::move(argv);
  s.search_path = search_path;
  s.cwd = std::move(cwd);
  return s;
}

// The helper, by its path.
ProcessSpec spec(std::vector<std::string> words) {
  words.insert(words.begin(), helper());
  return spec_of(std::move(words));
}

// Whether process `pid` has ended (POSIX: gone, or a zombie nobody reaped yet) within `limit`.
bool ends_within(long pid, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
#ifdef _WIN32
  HANDLE h = ::OpenProcess(SYNCHRONIZE, FALSE, static_cast<DWORD>(pid));
  if (!h) return true;
  const bool ended = ::WaitForSingleObject(h, static_cast<DWORD>(limit.count())) == WAIT_OBJECT_0;
  ::CloseHandle(h);
  (void)deadline;
  return ended;
#else
  while (true) {
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_word, name, state;
    if (stat >> pid_word >> name >> state && state == "Z") {
      ::waitpid(static_cast<pid_t>(pid), nullptr, WNOHANG);  // ours to reap when we are the namespace's init
      return true;
    }
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
#endif
}

void kill_pid(long pid) {
  if (pid <= 0) return;  // kill(2) would take 0 and -1 for many processes
#ifdef _WIN32
  if (HANDLE h = ::OpenProcess(PROCESS_TERMINATE, FALSE, static_cast<DWORD>(pid))) {
    ::TerminateProcess(h, 1);
    ::CloseHandle(h);
  }
#else
  ::kill(static_cast<pid_t>(pid), SIGKILL);
#endif
}

// PATH with `dir` first, for as long as it lives; the children inherit it.
class PathFirst {
 public:
  explicit PathFirst(const fs::path& dir) {
#ifdef _WIN32
    std::wstring old(32767, L'\0');
    old.resize(::GetEnvironmentVariableW(L"PATH", old.data(), static_cast<DWORD>(old.size())));
    old_ = old;
    ::SetEnvironmentVariableW(L"PATH", (dir.wstring() + L";" + old).c_str());
#else
    const char* old = std::getenv("PATH");
    old_ = old ? old : "";
    ::setenv("PATH", (dir.string() + ":" + old_).c_str(), 1);
#endif
  }
  ~PathFirst() {
#ifdef _WIN32
    ::SetEnvironmentVariableW(L"PATH", old_.c_str());
#else
    ::setenv("PATH", old_.c_str(), 1);
#endif
  }
  PathFirst(const PathFirst&) = delete;
  PathFirst& operator=(const PathFirst&) = delete;

 private:
#ifdef _WIN32
  std::wstring old_;
#else
  std::string old_;
#endif
};

}  // namespace

BOOST_AUTO_TEST_CASE(output_from_both_pipes_and_the_exit_code) {
  auto r = run_captured(spec({"print", "to stdout", "to stderr", "3"}), 30s);
  BOOST_TEST_REQUIRE(r.has_value(), r.error());
  BOOST_TEST(r->out == "to stdout");
  BOOST_TEST(r->err == "to stderr");
  BOOST_TEST_REQUIRE(r->status.has_value());
  BOOST_TEST(r->status->exited());
  BOOST_TEST(r->status->code() == 3);
  BOOST_TEST(r->status->describe() == "exited with status 3");

  // stderr is kept up to the limit, and read to its end all the same (the child finishes). A
  // Windows command line holds at most 32767 characters.
  auto limited = run_captured(spec({"print", "", std::string(20000, 'e'), "0"}), 30s, 10);
  BOOST_TEST_REQUIRE(limited.has_value(), limited.error());
  BOOST_TEST(limited->err == std::string(10, 'e'));
  BOOST_TEST_REQUIRE(limited->status.has_value());
  BOOST_TEST(limited->status->code() == 0);
}

BOOST_AUTO_TEST_CASE(words_reach_the_child_unchanged) {
  const std::vector<std::string> words = {"plain", "two words", "", "quote\"inside", "trailing\\", "back\\\\slashes\\\" quote",
                                          "tab\there", "\xC3\xBCn\xC3\xAF" "c\xC3\xB8" "d\xC3\xA9", "*.txt", "$HOME", "%PATH%", "a&b|c"};
  std::vector<std::string> argv = {"words"};
  argv.insert(argv.end(), words.begin(), words.end());
  auto r = run_captured(spec(argv), 30s);
  BOOST_TEST_REQUIRE(r.has_value(), r.error());
  std::string want;
  for (const auto& w : words) want += "[" + w + "]";
  BOOST_TEST(r->out == want);
}

BOOST_AUTO_TEST_CASE(path_is_searched_only_when_asked) {
  const PathFirst path(own_dir());
  ferry::test::TempDir elsewhere("ferry-process");
  // By its bare name (on Windows without ".exe": PATHEXT's extensions are tried).
  auto found = run_captured(spec_of({"process_helper", "print", "found", "", "0"}, true, elsewhere.path()), 30s);
  BOOST_TEST_REQUIRE(found.has_value(), found.error());
  BOOST_TEST(found->out == "found");

  auto not_searched = run_captured(spec_of({"process_helper", "print", "found", "", "0"}, false, elsewhere.path()), 30s);
  BOOST_TEST_REQUIRE(!not_searched.has_value());
  BOOST_TEST(not_searched.error().find("cannot start 'process_helper'") != std::string::npos, not_searched.error());

  auto missing = run_captured(spec_of({"no-such-program-ferry"}, true), 30s);
  BOOST_TEST_REQUIRE(!missing.has_value());
  BOOST_TEST(missing.error().find("no-such-program-ferry") != std::string::npos, missing.error());
}

BOOST_AUTO_TEST_CASE(the_child_runs_in_the_directory_given) {
  ferry::test::TempDir dir("ferry-process");
  const fs::path inside = dir / from_utf8("d\xC3\xAFr with space");
  fs::create_directory(inside);
  auto spec_in = spec({"cwd"});
  spec_in.cwd = inside;
  auto r = run_captured(spec_in, 30s);
  BOOST_TEST_REQUIRE(r.has_value(), r.error());
  BOOST_TEST(fs::equivalent(from_utf8(r->out), inside), r->out);

  spec_in.cwd = dir / "missing";
  auto missing = run_captured(spec_in, 30s);
  BOOST_TEST_REQUIRE(!missing.has_value());
  BOOST_TEST(missing.error().find("no directory") != std::string::npos, missing.error());
}

BOOST_AUTO_TEST_CASE(stdin_is_a_pipe_or_the_null_device) {
  auto piped = spec({"cat"});
  piped.in = Stdio::pipe;
  piped.out = Stdio::pipe;
  auto p = Process::start(piped);
  BOOST_TEST_REQUIRE(p.has_value(), p.error());
  const std::string text = "ping\nsecond line\n";
  BOOST_TEST(p->in.write(text.data(), text.size()) == static_cast<std::ptrdiff_t>(text.size()));
  p->in.reset();  // its end of input
  std::string got;
  char buf[256];
  for (std::ptrdiff_t n; (n = p->out.read(buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
  BOOST_TEST(got == text);
  BOOST_TEST(p->wait().code() == 0);

  auto null_in = run_captured(spec({"cat"}), 30s);  // Stdio::null by default: it ends at once
  BOOST_TEST_REQUIRE(null_in.has_value(), null_in.error());
  BOOST_TEST(null_in->out.empty());
  BOOST_TEST_REQUIRE(null_in->status.has_value());
  BOOST_TEST(null_in->status->code() == 0);
}

BOOST_AUTO_TEST_CASE(waits_time_out_and_signals_end_the_child) {
  auto p = Process::start(spec({"sleep", "30"}));
  BOOST_TEST_REQUIRE(p.has_value(), p.error());
  BOOST_TEST(p->id() > 0);
  const auto before = Clock::now();
  BOOST_TEST(!p->wait_for(200ms).has_value());
  BOOST_TEST((Clock::now() - before >= 190ms));
  BOOST_TEST(!p->reaped());
  p->signal(SIGTERM);
  const auto status = p->wait_for(10s);
  BOOST_TEST_REQUIRE(status.has_value());
  BOOST_TEST(p->reaped());
#ifdef _WIN32
  BOOST_TEST(status->code() == 128 + SIGTERM);  // terminated, with a shell's code for the signal
#else
  BOOST_TEST(status->signal() == SIGTERM);
  BOOST_TEST(status->code() == 128 + SIGTERM);
  BOOST_TEST(status->describe().find("killed by signal 15") == 0u, status->describe());
#endif
  BOOST_TEST(p->wait().native == status->native);  // reaped once, asked any number of times

  auto q = Process::start(spec({"sleep", "30"}));
  BOOST_TEST_REQUIRE(q.has_value(), q.error());
  q->kill_group();
  const auto killed = q->wait();
#ifndef _WIN32
  BOOST_TEST(killed.signal() == SIGKILL);
#endif
  BOOST_TEST(!(killed.exited() && killed.code() == 0));

  // Destroying a Process whose child still runs kills it.
  long pid = 0;
  {
    auto r = Process::start(spec({"sleep", "30"}));
    BOOST_TEST_REQUIRE(r.has_value(), r.error());
    pid = r->id();
  }
  BOOST_TEST_REQUIRE(pid > 0);
  BOOST_TEST(ends_within(pid, 10s));
}

BOOST_AUTO_TEST_CASE(a_timeout_kills_the_child_and_what_it_started) {
  ferry::test::TempDir dir("ferry-process");
  const fs::path pid_file = dir / "grandchild.pid";
  // The grandchild shares the child's group (job) and its stdout: the output never ends.
  const auto before = Clock::now();
  auto r = run_captured(spec({"grandchild", utf8(pid_file)}), 3s);
  const auto took = Clock::now() - before;
  BOOST_TEST_REQUIRE(r.has_value(), r.error());
  BOOST_TEST(!r->status.has_value());  // ran past the timeout
  BOOST_TEST((took >= 3s && took < 20s));
  long grandchild = 0;
  std::ifstream(pid_file) >> grandchild;
  BOOST_TEST_REQUIRE(grandchild > 0);
  const bool ended = ends_within(grandchild, 10s);
  if (!ended) kill_pid(grandchild);
  BOOST_TEST(ended);
}

BOOST_AUTO_TEST_CASE(a_program_that_cannot_start_is_an_error) {
  auto r = Process::start(spec_of({utf8(own_dir() / "no-such-file")}));
  BOOST_TEST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().find("cannot start") == 0u, r.error());
  BOOST_TEST(r.error().find("no-such-file") != std::string::npos, r.error());
  auto none = Process::start({});
  BOOST_TEST(!none.has_value());
#ifndef _WIN32
  // The child that failed to exec was reaped: no zombie left (the earlier cases reaped theirs).
  int status = 0;
  const pid_t left = ::waitpid(-1, &status, WNOHANG);
  const int error = errno;
  BOOST_TEST(left == -1);
  BOOST_TEST(error == ECHILD);
#endif
}

#ifndef _WIN32
BOOST_AUTO_TEST_CASE(posix_children_lead_their_group_with_sigpipe_default) {
  // As the helper does: SIGPIPE ignored, and a thread with signals blocked starting the child.
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old);
  sigset_t block, was;
  sigfillset(&block);
  ::pthread_sigmask(SIG_BLOCK, &block, &was);
  auto r = run_captured(spec({"signals"}), 30s);
  ::pthread_sigmask(SIG_SETMASK, &was, nullptr);
  ::sigaction(SIGPIPE, &old, nullptr);
  BOOST_TEST_REQUIRE(r.has_value(), r.error());
  BOOST_TEST(r->out == "pipe=default blocked=0 group=leader");
}
#endif
