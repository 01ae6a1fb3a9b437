// Whole reads and writes over a pipe (which moves at most its capacity per call, so short
// counts really happen) and over a file at offsets; files opened by open_file keep their bytes as
// written (binary on Windows). A read interrupted by a signal is retried (POSIX). write_stream
// waits out a non-blocking pipe that is full where write_full gives up (POSIX).
#define BOOST_TEST_MODULE full_io
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/full_io.hpp"
#include "common/open_file.hpp"
#include "common/unique_fd.hpp"
#include "tests/support/temp_dir.hpp"

#ifdef _WIN32
#include <io.h>
#else
#include <pthread.h>
#include <sys/syscall.h>

#include <atomic>
#include <fstream>
#endif

namespace posix = ferry::posix;
using posix::UniqueFd;

namespace {

constexpr unsigned kPipeSize = 4096;  // the smallest pipe: every big write is cut short

struct Pipe {
  UniqueFd r, w;
  Pipe() {
    int fds[2];
#ifdef _WIN32
    if (::_pipe(fds, kPipeSize, O_BINARY | O_NOINHERIT) != 0) throw std::runtime_error("pipe");
#else
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    ::fcntl(fds[1], F_SETPIPE_SZ, kPipeSize);
#endif
    r.reset(fds[0]);
    w.reset(fds[1]);
  }
};

std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7) % 26);
  return s;
}

// A file of its own in a directory removed after the test.
struct TempFile {
  ferry::test::TempDir dir{"ferry-full-io"};
  UniqueFd fd{posix::open_file(dir / "f", O_RDWR | O_CREAT | O_TRUNC)};
};

}  // namespace

BOOST_AUTO_TEST_CASE(write_full_and_read_full_move_everything_through_a_small_pipe) {
  Pipe p;
  const std::string sent = pattern(1 << 20);  // 256 times the pipe's capacity
  ssize_t wrote = -2;
  std::thread writer([&] {
    wrote = posix::write_full(p.w.get(), sent.data(), sent.size());
    p.w.reset();
  });
  // The reader asks for odd sizes: each read returns at most what the pipe holds.
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

BOOST_AUTO_TEST_CASE(write_stream_waits_out_a_full_non_blocking_pipe_and_loses_nothing) {
  Pipe p;
#ifndef _WIN32
  ::fcntl(p.w.get(), F_SETFL, ::fcntl(p.w.get(), F_GETFL) | O_NONBLOCK);  // as another program may leave it
  errno = 0;
  BOOST_TEST(posix::write_full(p.w.get(), pattern(kPipeSize * 4).data(), kPipeSize * 4) == -1);  // the plain one gives up
  BOOST_TEST(errno == EAGAIN);
  char sink[kPipeSize];  // what it did put in, so the pipe starts empty again
  BOOST_REQUIRE(posix::read_full(p.r.get(), sink, kPipeSize) == static_cast<ssize_t>(kPipeSize));
#endif
  const std::string sent = pattern(1 << 18);
  ssize_t wrote = -2;
  std::thread writer([&] {
    wrote = posix::write_stream(p.w.get(), sent.data(), sent.size());
    p.w.reset();
  });
  std::string got;
  BOOST_REQUIRE(posix::read_to_end(p.r.get(), got));
  writer.join();
  BOOST_TEST(wrote == static_cast<ssize_t>(sent.size()));
  BOOST_TEST((got == sent));
}

BOOST_AUTO_TEST_CASE(read_full_returns_fewer_bytes_only_at_end_of_file) {
  Pipe p;
  BOOST_REQUIRE(posix::write_full(p.w.get(), "abc", 3) == 3);
  p.w.reset();
  char buf[16];
  BOOST_TEST(posix::read_full(p.r.get(), buf, sizeof buf) == 3);
  BOOST_TEST(std::string(buf, 3) == "abc");
  BOOST_TEST(posix::read_full(p.r.get(), buf, sizeof buf) == 0);
}

BOOST_AUTO_TEST_CASE(errors_are_minus_one_with_errno) {
  Pipe p;
  p.r.reset();
#ifndef _WIN32
  ::signal(SIGPIPE, SIG_IGN);
#endif
  errno = 0;
  BOOST_TEST(posix::write_full(p.w.get(), "x", 1) == -1);
  BOOST_TEST(errno == EPIPE);
  char c;
  BOOST_TEST(posix::read_full(-1, &c, 1) == -1);
  BOOST_TEST(errno == EBADF);
  BOOST_TEST(posix::pread_full(p.w.get(), &c, 1, 0) == -1);  // a pipe has no offsets
  BOOST_TEST(errno == ESPIPE);
  BOOST_TEST(posix::pwrite_full(p.w.get(), &c, 1, 0) == -1);
  BOOST_TEST(errno == ESPIPE);
}

BOOST_AUTO_TEST_CASE(pwrite_full_and_pread_full_work_at_offsets) {
  TempFile f;
  BOOST_REQUIRE(f.fd);
  const std::string a = pattern(300'000), b = "in the middle";
  BOOST_TEST(posix::pwrite_full(f.fd.get(), a.data(), a.size(), 0) == static_cast<ssize_t>(a.size()));
  BOOST_TEST(posix::pwrite_full(f.fd.get(), b.data(), b.size(), 1000) == static_cast<ssize_t>(b.size()));
  std::string expect = a;
  expect.replace(1000, b.size(), b);
  std::string got(a.size(), '\0');
  BOOST_TEST(posix::pread_full(f.fd.get(), got.data(), got.size(), 0) == static_cast<ssize_t>(a.size()));
  BOOST_TEST((got == expect));
  // Past the end: what is there, then nothing.
  char tail[64];
  BOOST_TEST(posix::pread_full(f.fd.get(), tail, sizeof tail, a.size() - 10) == 10);
  BOOST_TEST(posix::pread_full(f.fd.get(), tail, sizeof tail, a.size() + 10) == 0);
  // pread/pwrite leave the file offset alone: a plain read still starts at 0.
  BOOST_TEST(::lseek(f.fd.get(), 0, SEEK_CUR) == 0);
  BOOST_TEST(posix::read_full(f.fd.get(), got.data(), 5) == 5);
  BOOST_TEST(got.substr(0, 5) == expect.substr(0, 5));
}

BOOST_AUTO_TEST_CASE(read_to_end_appends_up_to_the_limit) {
  TempFile f;
  const std::string a = pattern(200'000);
  BOOST_REQUIRE(posix::write_full(f.fd.get(), a.data(), a.size()) == static_cast<ssize_t>(a.size()));
  ::lseek(f.fd.get(), 0, SEEK_SET);
  std::string out = "x";
  BOOST_TEST(posix::read_to_end(f.fd.get(), out));
  BOOST_TEST((out == "x" + a));
  ::lseek(f.fd.get(), 0, SEEK_SET);
  std::string cut;
  BOOST_TEST(posix::read_to_end(f.fd.get(), cut, 70'000));
  BOOST_TEST((cut == a.substr(0, 70'000)));
  std::string none;
  BOOST_TEST(!posix::read_to_end(-1, none));
  BOOST_TEST(errno == EBADF);
}

// Line ends and ^Z (the C runtime's text-mode end of file) are bytes like any other.
BOOST_AUTO_TEST_CASE(open_file_keeps_every_byte_as_written) {
  ferry::test::TempDir dir("ferry-full-io");
  const std::string bytes = std::string("a\r\nb\nc\x1a" "d\r", 9) + std::string(1, '\0') + "\n";
  {
    const UniqueFd w(posix::open_file(dir / "f", O_WRONLY | O_CREAT | O_EXCL));
    BOOST_REQUIRE(w);
    BOOST_TEST(posix::write_full(w.get(), bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  }
  BOOST_TEST(ferry::test::read_file(dir / "f") == bytes);
  const UniqueFd r(posix::open_file(dir / "f", O_RDONLY));
  std::string back;
  BOOST_TEST(posix::read_to_end(r.get(), back));
  BOOST_TEST((back == bytes));
  BOOST_TEST(posix::open_file(dir / "f", O_WRONLY | O_CREAT | O_EXCL) == -1);
  BOOST_TEST(errno == EEXIST);
  BOOST_TEST(posix::open_file(dir / "missing", O_RDONLY) == -1);
  BOOST_TEST(errno == ENOENT);
}

#ifndef _WIN32

namespace {

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

#endif
