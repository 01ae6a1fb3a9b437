// Whole reads and writes over a pipe (which moves at most its capacity per call, so short
// counts really happen) and over a file at offsets.
#define BOOST_TEST_MODULE full_io
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <pthread.h>
#include <sys/syscall.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/full_io.hpp"
#include "common/unique_fd.hpp"

namespace posix = ferry::posix;
using posix::UniqueFd;

namespace {

struct Pipe {
  UniqueFd r, w;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    r.reset(fds[0]);
    w.reset(fds[1]);
    ::fcntl(w.get(), F_SETPIPE_SZ, 4096);  // the smallest pipe: every big write is cut short
  }
};

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7) % 26);
  return s;
}

UniqueFd temp_file() {
  char tmpl[] = "/tmp/ferry-full-io-XXXXXX";
  UniqueFd fd(::mkstemp(tmpl));
  ::unlink(tmpl);
  return fd;
}

std::atomic<int> g_signals{0};
void count_signal(int) { g_signals.fetch_add(1); }

// True once thread `tid` is blocked in the system call `nr` (/proc/.../syscall starts with it).
bool blocked_in(pid_t tid, long nr) {
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/syscall");
  long got = -1;
  return static_cast<bool>(in >> got) && got == nr;
}

}  // namespace

// A signal whose handler is installed without SA_RESTART makes a blocked read(2) fail with
// EINTR; read_full retries it and still returns the whole count.
BOOST_AUTO_TEST_CASE(read_full_retries_a_read_interrupted_by_a_signal) {
  struct sigaction sa {};
  sa.sa_handler = count_signal;
  sa.sa_flags = 0;  // no SA_RESTART: the kernel hands EINTR back to the caller
  sigemptyset(&sa.sa_mask);
  struct sigaction old {};
  BOOST_REQUIRE(::sigaction(SIGUSR1, &sa, &old) == 0);
  Pipe p;
  std::atomic<pid_t> tid{0};
  ssize_t got = -2;
  char buf[4] = {};
  std::thread reader([&] {
    tid = static_cast<pid_t>(::syscall(SYS_gettid));
    got = ferry::posix::read_full(p.r.get(), buf, sizeof buf);
  });
  while (tid == 0 || !blocked_in(tid, SYS_read)) std::this_thread::yield();
  BOOST_REQUIRE(::pthread_kill(reader.native_handle(), SIGUSR1) == 0);
  // The handler ran and the reader is blocked in read(2) again: the EINTR was retried.
  while (g_signals == 0 || !blocked_in(tid, SYS_read)) std::this_thread::yield();
  BOOST_REQUIRE(::write(p.w.get(), "ab", 2) == 2);  // a short first part
  BOOST_REQUIRE(::write(p.w.get(), "cd", 2) == 2);
  reader.join();
  ::sigaction(SIGUSR1, &old, nullptr);
  BOOST_TEST(g_signals.load() == 1);
  BOOST_TEST(got == 4);
  BOOST_TEST(std::string(buf, 4) == "abcd");
}

BOOST_AUTO_TEST_CASE(write_full_and_read_full_move_everything_through_a_small_pipe) {
  Pipe p;
  const std::string sent = pattern(1 << 20);  // 256 times the pipe's capacity
  ssize_t wrote = -2;
  std::thread writer([&] {
    wrote = posix::write_full(p.w.get(), sent.data(), sent.size());
    p.w.reset();
  });
  // The reader asks for odd sizes: each read(2) returns at most what the pipe holds.
  std::string got;
  std::vector<char> buf(100'003);
  for (;;) {
    const ssize_t n = posix::read_full(p.r.get(), buf.data(), buf.size());
    BOOST_REQUIRE(n >= 0);
    got.append(buf.data(), static_cast<std::size_t>(n));
    if (static_cast<std::size_t>(n) < buf.size()) break;  // short only at end of file
  }
  writer.join();
  BOOST_TEST(wrote == static_cast<ssize_t>(sent.size()));
  BOOST_TEST(got.size() == sent.size());
  BOOST_TEST((got == sent));
}

BOOST_AUTO_TEST_CASE(read_full_returns_fewer_bytes_only_at_end_of_file) {
  Pipe p;
  BOOST_REQUIRE(::write(p.w.get(), "abc", 3) == 3);
  p.w.reset();
  char buf[16];
  BOOST_TEST(posix::read_full(p.r.get(), buf, sizeof buf) == 3);
  BOOST_TEST(std::string(buf, 3) == "abc");
  BOOST_TEST(posix::read_full(p.r.get(), buf, sizeof buf) == 0);
}

BOOST_AUTO_TEST_CASE(errors_are_minus_one_with_errno) {
  Pipe p;
  p.r.reset();
  ::signal(SIGPIPE, SIG_IGN);
  errno = 0;
  BOOST_TEST(posix::write_full(p.w.get(), "x", 1) == -1);
  BOOST_TEST(errno == EPIPE);
  char c;
  BOOST_TEST(posix::read_full(-1, &c, 1) == -1);
  BOOST_TEST(errno == EBADF);
  BOOST_TEST(posix::pread_full(p.w.get(), &c, 1, 0) == -1);  // a pipe has no offsets
  BOOST_TEST(errno == ESPIPE);
}

BOOST_AUTO_TEST_CASE(pwrite_full_and_pread_full_work_at_offsets) {
  UniqueFd f = temp_file();
  BOOST_REQUIRE(f);
  const std::string a = pattern(300'000), b = "in the middle";
  BOOST_TEST(posix::pwrite_full(f.get(), a.data(), a.size(), 0) == static_cast<ssize_t>(a.size()));
  BOOST_TEST(posix::pwrite_full(f.get(), b.data(), b.size(), 1000) == static_cast<ssize_t>(b.size()));
  std::string expect = a;
  expect.replace(1000, b.size(), b);
  std::string got(a.size(), '\0');
  BOOST_TEST(posix::pread_full(f.get(), got.data(), got.size(), 0) == static_cast<ssize_t>(a.size()));
  BOOST_TEST((got == expect));
  // Past the end: what is there, then nothing.
  char tail[64];
  BOOST_TEST(posix::pread_full(f.get(), tail, sizeof tail, a.size() - 10) == 10);
  BOOST_TEST(posix::pread_full(f.get(), tail, sizeof tail, a.size() + 10) == 0);
  // pread/pwrite leave the file offset alone.
  BOOST_TEST(::lseek(f.get(), 0, SEEK_CUR) == 0);
}

BOOST_AUTO_TEST_CASE(read_to_end_appends_up_to_the_limit) {
  UniqueFd f = temp_file();
  const std::string a = pattern(200'000);
  BOOST_REQUIRE(posix::write_full(f.get(), a.data(), a.size()) == static_cast<ssize_t>(a.size()));
  ::lseek(f.get(), 0, SEEK_SET);
  std::string out = "x";
  BOOST_TEST(posix::read_to_end(f.get(), out));
  BOOST_TEST((out == "x" + a));
  ::lseek(f.get(), 0, SEEK_SET);
  std::string cut;
  BOOST_TEST(posix::read_to_end(f.get(), cut, 70'000));
  BOOST_TEST((cut == a.substr(0, 70'000)));
  std::string none;
  BOOST_TEST(!posix::read_to_end(-1, none));
  BOOST_TEST(errno == EBADF);
}
