// TerminalInput (common/terminal_input.hpp) on both platforms (this test runs on Linux and under
// Wine) with stdin a pipe: what is written arrives through take() after a wait on its wakeup, the
// writer's close is the end, at most about 1 MiB waits untaken however much is written, and the
// destructor stops a reader that is blocked in a read. On POSIX also a real pseudo-terminal:
// raw mode while it lives, the old mode after, SIGWINCH as a resize.
#define BOOST_TEST_MODULE terminal_input
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <string>
#include <thread>

#include "common/terminal_input.hpp"

#ifdef _WIN32
#include <windows.h>
#else
#include <pty.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>
#endif

using namespace std::chrono_literals;
using ferry::platform::TerminalInput;

namespace {

// stdin replaced by the read end of a pipe while it lives; write() and close() feed it.
class PipedStdin {
 public:
#ifdef _WIN32
  PipedStdin() {
    HANDLE r = nullptr;
    BOOST_REQUIRE(::CreatePipe(&r, &writer_, nullptr, 0));
    saved_ = ::GetStdHandle(STD_INPUT_HANDLE);
    ::SetStdHandle(STD_INPUT_HANDLE, r);
    reader_ = r;
  }
  ~PipedStdin() {
    close();
    ::SetStdHandle(STD_INPUT_HANDLE, saved_);
    ::CloseHandle(reader_);
  }
  void write(const std::string& s) {
    DWORD put = 0;
    BOOST_REQUIRE(::WriteFile(writer_, s.data(), static_cast<DWORD>(s.size()), &put, nullptr) && put == s.size());
  }
  void close() {
    if (writer_) ::CloseHandle(writer_);
    writer_ = nullptr;
  }

 private:
  HANDLE saved_ = nullptr, reader_ = nullptr, writer_ = nullptr;
#else
  PipedStdin() {
    int p[2];
    BOOST_REQUIRE(::pipe(p) == 0);
    saved_ = ::dup(0);
    ::dup2(p[0], 0);
    ::close(p[0]);
    writer_ = p[1];
  }
  ~PipedStdin() {
    close();
    ::dup2(saved_, 0);
    ::close(saved_);
  }
  void write(const std::string& s) {
    for (std::size_t done = 0; done < s.size();) {
      const auto n = ::write(writer_, s.data() + done, s.size() - done);
      BOOST_REQUIRE(n > 0);
      done += static_cast<std::size_t>(n);
    }
  }
  void close() {
    if (writer_ >= 0) ::close(writer_);
    writer_ = -1;
  }

 private:
  int saved_ = -1, writer_ = -1;
#endif
};

// Takes until `want` bytes or the end came (or 20 s passed): what came, and whether it ended.
std::pair<std::string, bool> take_until(TerminalInput& in, std::size_t want, std::size_t* largest = nullptr) {
  std::string got;
  bool eof = false;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (got.size() < want && !eof && std::chrono::steady_clock::now() < deadline) {
    ferry::platform::Wakeup* w[] = {&in.wakeup()};
    if (ferry::platform::wait_any(w, 1s) < 0) continue;
    auto t = in.take();
    if (largest) *largest = std::max(*largest, t.bytes.size());
    got += t.bytes;
    eof = t.eof;
  }
  return {got, eof};
}

}  // namespace

BOOST_AUTO_TEST_CASE(piped_bytes_arrive_in_order_and_the_writers_close_is_the_end) {
  PipedStdin stdin_pipe;
  TerminalInput in(true);
  BOOST_TEST(!in.raw());  // a pipe is no terminal: nothing to make raw
  stdin_pipe.write("first line\n");
  auto [first, ended] = take_until(in, 11);
  BOOST_TEST(first == "first line\n");
  BOOST_TEST(!ended);
  stdin_pipe.write("no newline");
  stdin_pipe.close();
  auto [rest, eof] = take_until(in, static_cast<std::size_t>(-1));
  BOOST_TEST(rest == "no newline");
  BOOST_TEST(eof);
}

BOOST_AUTO_TEST_CASE(a_large_input_is_held_at_most_a_mebibyte_at_a_time_and_arrives_whole) {
  PipedStdin stdin_pipe;
  TerminalInput in(false);
  std::string big;
  for (int i = 0; big.size() < (5u << 20); ++i) big += std::to_string(i) + ",";
  ferry::platform::Wakeup written;
  std::thread writer([&] {
    stdin_pipe.write(big);
    written.raise();
    stdin_pipe.close();
  });
  // Nothing taken: the reader stops near 1 MiB, so the writer cannot finish its 5 (a reader that
  // read on would let it finish at once).
  ferry::platform::Wakeup* w[] = {&written};
  BOOST_TEST(ferry::platform::wait_any(w, 1s) == -1);
  std::size_t largest = 0;
  auto [got, eof] = take_until(in, big.size(), &largest);
  writer.join();
  BOOST_TEST(got.size() == big.size());
  BOOST_TEST((got == big));
  BOOST_TEST(largest <= (1u << 20) + 65536, "one take held " << largest << " bytes");
  if (!eof) BOOST_TEST(take_until(in, 1).second);
}

BOOST_AUTO_TEST_CASE(the_destructor_stops_a_reader_blocked_in_a_read) {
  PipedStdin stdin_pipe;
  const auto start = std::chrono::steady_clock::now();
  {
    TerminalInput in(false);
    stdin_pipe.write("x");
    BOOST_TEST(take_until(in, 1).first == "x");
  }  // the reader is in a read that nothing will end but the stop
  BOOST_TEST((std::chrono::steady_clock::now() - start < 15s));
}

#ifndef _WIN32
BOOST_AUTO_TEST_CASE(raw_mode_on_a_real_terminal_lives_as_long_as_it_and_sigwinch_is_a_resize) {
  int master = -1, slave = -1;
  BOOST_REQUIRE(::openpty(&master, &slave, nullptr, nullptr, nullptr) == 0);
  const int saved = ::dup(0);
  ::dup2(slave, 0);
  {
    TerminalInput in(true);
    BOOST_TEST(in.raw());
    termios now{};
    BOOST_REQUIRE(::tcgetattr(0, &now) == 0);
    BOOST_TEST((now.c_lflag & (ICANON | ECHO | ISIG)) == 0u);
    BOOST_REQUIRE(::write(master, "\x03q", 2) == 2);  // Ctrl-C is a byte now, not a signal
    BOOST_TEST(take_until(in, 2).first == "\x03q");
    ::raise(SIGWINCH);
    ferry::platform::Wakeup* w[] = {&in.wakeup()};
    BOOST_REQUIRE(ferry::platform::wait_any(w, 20s) == 0);
    BOOST_TEST(in.take().resized);
    BOOST_TEST(!in.take().resized);  // once per change
  }
  termios after{};
  BOOST_REQUIRE(::tcgetattr(0, &after) == 0);
  BOOST_TEST((after.c_lflag & ICANON) != 0u);
  BOOST_TEST((after.c_lflag & ECHO) != 0u);
  ::dup2(saved, 0);
  ::close(saved);
  ::close(slave);
  ::close(master);
}
#endif
