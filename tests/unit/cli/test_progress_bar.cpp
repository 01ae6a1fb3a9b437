// ProgressBar on a real pseudo-terminal and on a pipe: drawn only on a terminal, redrawn at
// most every 100 ms (a fake clock drives time), always for the final report, erased by clear(),
// and render() keeps to the width with percent, rate and ETA.
#define BOOST_TEST_MODULE progress_bar
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "helper/cli/progress_bar.hpp"

using ferry::cli::ProgressBar;
using namespace std::chrono_literals;

namespace {

// Everything readable on `fd` now (the writes happened before this is called).
std::string drain(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0 || !(p.revents & POLLIN)) return out;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

struct Pty {
  int master = -1, slave = -1;
  Pty() {
    BOOST_REQUIRE(::openpty(&master, &slave, nullptr, nullptr, nullptr) == 0);
    winsize ws{};
    ws.ws_col = 100;
    ws.ws_row = 24;
    ::ioctl(slave, TIOCSWINSZ, &ws);
  }
  ~Pty() {
    ::close(master);
    ::close(slave);
  }
};

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

BOOST_AUTO_TEST_CASE(render_has_percent_bytes_rate_and_eta_within_the_width) {
  auto line = ProgressBar::render("sync", 5u << 20, 20u << 20, 1u << 20, 100);
  BOOST_TEST(line.find(" 25% [") != std::string::npos, line);
  BOOST_TEST(line.find("5.0 MiB / 20.0 MiB") != std::string::npos, line);
  BOOST_TEST(line.find("1.0 MiB/s") != std::string::npos, line);
  BOOST_TEST(line.find("ETA 0:15") != std::string::npos, line);
  BOOST_TEST(line.size() < 100u);
  auto narrow = ProgressBar::render("sync", 1, 2, 0, 30);
  BOOST_TEST(narrow.size() < 30u, narrow);
  BOOST_TEST(narrow.find("50%") != std::string::npos, narrow);
  auto done = ProgressBar::render("pull", 7, 7, 3.5, 80);
  BOOST_TEST(done.find("100% [########################################]") != std::string::npos, done);
  BOOST_TEST(done.find("ETA 0:00") != std::string::npos, done);
}

BOOST_AUTO_TEST_CASE(draws_on_a_terminal_at_most_ten_times_a_second_and_clears) {
  Pty pty;
  auto now = std::chrono::steady_clock::time_point{} + 1h;
  ProgressBar bar("sync", pty.slave, false, [&] { return now; });
  BOOST_REQUIRE(bar.enabled());  // a real terminal
  const std::uint64_t total = 1000;
  for (std::uint64_t done = 1; done < total; ++done) {
    now += 1ms;  // 999 reports over ~1 s
    bar.update(done, total);
  }
  bar.update(total, total);  // the last one is always drawn
  BOOST_TEST(bar.redraws() >= 10);
  BOOST_TEST(bar.redraws() <= 12);
  bar.clear();
  std::string out = drain(pty.master);
  BOOST_TEST(out.find("100%") != std::string::npos);
  BOOST_TEST(out.find("ETA") != std::string::npos);
  BOOST_TEST(out.find('\n') == std::string::npos);  // one redrawn line, never a scroll
  BOOST_TEST(out.ends_with("\r\033[K"));            // cleared: the summary starts on a clean line
  BOOST_TEST(count(out, "\r") == static_cast<std::size_t>(bar.redraws()) + 1);
  bar.clear();  // nothing drawn since: nothing more written
  BOOST_TEST(drain(pty.master).empty());
}

BOOST_AUTO_TEST_CASE(nothing_on_a_pipe) {
  int p[2];
  BOOST_REQUIRE(::pipe2(p, O_CLOEXEC | O_NONBLOCK) == 0);
  {
    ProgressBar bar("sync", p[1]);
    BOOST_TEST(!bar.enabled());
    BOOST_TEST(!ferry::cli::progress_callback(std::make_shared<ProgressBar>("sync", p[1])));
    bar.update(1, 2);
    bar.update(2, 2);
    bar.clear();
  }
  char c;
  BOOST_TEST(::read(p[0], &c, 1) == -1);  // empty (EAGAIN): not one byte
  ::close(p[0]);
  ::close(p[1]);
}
