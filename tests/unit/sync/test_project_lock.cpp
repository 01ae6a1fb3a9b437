// The per-project sync lock across processes: a second taker waits, is told who holds it, goes on
// once it is released, and can give up when cancelled.
#define BOOST_TEST_MODULE project_lock
#include <boost/test/unit_test.hpp>

#ifndef _WIN32
#include <sys/wait.h>
#endif
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "helper/sync/project_lock.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::sync::ProjectLock;

namespace {

#ifdef _WIN32
// Windows has no fork: the holder is a second descriptor of this process, which LockFileEx refuses
// as it refuses another process's (and flock another open file description's).
struct Holder {
  pid_t pid = ::getpid();
  std::optional<ProjectLock> lock;
  explicit Holder(const std::filesystem::path& root) {
    auto taken = ProjectLock::acquire(root);
    BOOST_REQUIRE(taken.has_value());
    lock.emplace(std::move(*taken));
  }
  void let_go() { lock.reset(); }
};
#else
// A child process holding the lock until it reads a byte from `release`.
struct Holder {
  pid_t pid = -1;
  int release[2] = {-1, -1};
  explicit Holder(const std::filesystem::path& root) {
    int ready[2];
    BOOST_REQUIRE(::pipe(ready) == 0 && ::pipe(release) == 0);
    pid = ::fork();
    if (pid == 0) {
      auto lock = ProjectLock::acquire(root);
      char c = lock ? 'y' : 'n';
      [[maybe_unused]] auto w = ::write(ready[1], &c, 1);
      [[maybe_unused]] auto r = ::read(release[0], &c, 1);
      ::_exit(0);
    }
    char c = 0;
    BOOST_REQUIRE(::read(ready[0], &c, 1) == 1);
    BOOST_REQUIRE(c == 'y');
    ::close(ready[0]);
    ::close(ready[1]);
  }
  void let_go() {
    char c = 'x';
    [[maybe_unused]] auto w = ::write(release[1], &c, 1);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
  ~Holder() {
    if (pid > 0) let_go();
    ::close(release[0]);
    ::close(release[1]);
  }
};

#endif

}  // namespace

BOOST_AUTO_TEST_CASE(a_second_taker_waits_names_the_holder_and_goes_on_after_it) {
  ferry::test::TempDir dir("ferry-lock");
  Holder holder(dir.path());
  std::mutex m;
  std::condition_variable cv;
  std::string told;
  std::atomic<bool> got{false};
  std::thread taker([&] {
    auto lock = ProjectLock::acquire(dir.path(), [&](const std::string& who) {
      std::lock_guard l(m);
      told = who;
      cv.notify_all();
    });
    got = lock.has_value();
  });
  {
    std::unique_lock l(m);
    BOOST_REQUIRE(cv.wait_for(l, std::chrono::seconds(10), [&] { return !told.empty(); }));
  }
  BOOST_TEST(!got.load());  // still waiting while the other process holds it
  BOOST_TEST(told.find("(pid " + std::to_string(holder.pid) + ")") != std::string::npos, told);
  holder.let_go();
  taker.join();
  BOOST_TEST(got.load());
}

BOOST_AUTO_TEST_CASE(a_cancelled_wait_gives_up_and_says_for_whom) {
  ferry::test::TempDir dir("ferry-lock");
  Holder holder(dir.path());
  std::atomic<bool> cancel{false};
  auto lock = ProjectLock::acquire(dir.path(), [&](const std::string&) { cancel = true; }, [&] { return cancel.load(); });
  BOOST_REQUIRE(!lock.has_value());
  BOOST_TEST(lock.error().message.find("cancelled while waiting for") != std::string::npos, lock.error().message);
  BOOST_TEST((lock.error().kind == ferry::ErrorKind::cancelled));
}

BOOST_AUTO_TEST_CASE(released_locks_are_taken_at_once_by_the_same_process) {
  ferry::test::TempDir dir("ferry-lock");
  int waits = 0;
  for (int i = 0; i < 3; ++i) {
    auto lock = ProjectLock::acquire(dir.path(), [&](const std::string&) { ++waits; });
    BOOST_REQUIRE(lock.has_value());
  }
  BOOST_TEST(waits == 0);
}
