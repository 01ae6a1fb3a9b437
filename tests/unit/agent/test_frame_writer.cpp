// FrameWriter: many threads sending at once never interleave frames, frames with big byte
// strings (written in pieces by writev) arrive whole through a pipe that takes a page at a time,
// and a closed reader turns into a failed send (not a signal) that every later send repeats at once.
#define BOOST_TEST_MODULE frame_writer
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <thread>
#include <vector>

#include "protocol/agent_wire.hpp"
#include "remote-runtime/agent/run/frame_writer.hpp"

using namespace ferry::protocol;
using ferry::agent::run::FrameWriter;

namespace {

// Reads notifications from `fd` in `read_size` pieces until `want` passed `good` or one did not
// (or the pipe ended); returns how many passed.
int read_frames(int fd, int want, std::size_t read_size, const std::function<bool(const json&)>& good) {
  FrameDecoder decoder(agent_frame_limits());
  std::vector<char> buf(read_size);
  int frames = 0;
  while (frames < want) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n <= 0) break;
    decoder.feed(std::string_view(buf.data(), static_cast<std::size_t>(n)));
    while (auto body = decoder.next()) {
      if (!*body) return frames;
      auto m = decode_agent_body(**body);
      if (!m || !good(std::get<Notification>(*m).params)) return frames;
      ++frames;
    }
  }
  return frames;
}

}  // namespace

BOOST_AUTO_TEST_CASE(concurrent_senders_write_whole_frames) {
  int fds[2];
  BOOST_REQUIRE(::pipe(fds) == 0);
  FrameWriter writer(fds[1]);
  constexpr int kThreads = 4, kEach = 150;
  std::map<int, int> next_seq;
  int frames = 0;
  std::thread reader([&] {
    frames = read_frames(fds[0], kThreads * kEach, 1 << 16, [&](const json& p) {
      const int t = p["t"].get<int>();
      // Per sender, frames arrive whole and in the order that thread sent them.
      return p["seq"].get<int>() == next_seq[t]++ && p["blob"].get_binary().size() == static_cast<std::size_t>(1000 + t * 7000);
    });
  });
  std::vector<std::thread> senders;
  for (int t = 0; t < kThreads; ++t)
    senders.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i)
        writer.send_notification("run/output", {{"t", t}, {"seq", i}, {"blob", json::binary(std::vector<std::uint8_t>(1000 + t * 7000, 0x5a))}});
    });
  for (auto& s : senders) s.join();
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  BOOST_TEST(frames == kThreads * kEach);
  BOOST_TEST(!writer.broken());
}

BOOST_AUTO_TEST_CASE(pieced_frames_survive_short_writes) {
  int fds[2];
  BOOST_REQUIRE(::pipe(fds) == 0);
  ::fcntl(fds[1], F_SETPIPE_SZ, 4096);  // each writev takes a page or so: its pieces are resumed mid-way
  FrameWriter writer(fds[1]);
  constexpr int kThreads = 2, kEach = 6;
  auto blob_of = [](int t, int i) {
    std::vector<std::uint8_t> b(kFramePieceAbove + static_cast<std::size_t>(t * 4099 + i * 37));
    for (std::size_t k = 0; k < b.size(); ++k) b[k] = static_cast<std::uint8_t>(k * 31 + static_cast<std::size_t>(t + i));
    return b;
  };
  int frames = 0;
  std::thread reader([&] {
    frames = read_frames(fds[0], kThreads * kEach, 1000, [&](const json& p) {  // odd-sized reads
      const std::vector<std::uint8_t>& got = p["blob"].get_binary();
      return got == blob_of(p["t"].get<int>(), p["i"].get<int>()) && p["tail"].get<std::string>() == "after the blob";
    });
  });
  std::vector<std::thread> senders;
  for (int t = 0; t < kThreads; ++t)
    senders.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i)
        writer.send_notification("run/output", {{"t", t}, {"i", i}, {"blob", json::binary(blob_of(t, i))}, {"tail", "after the blob"}});
    });
  for (auto& s : senders) s.join();
  ::close(fds[1]);
  reader.join();
  ::close(fds[0]);
  BOOST_TEST(frames == kThreads * kEach);
  BOOST_TEST(!writer.broken());
}

BOOST_AUTO_TEST_CASE(a_closed_reader_breaks_the_writer) {
  ::signal(SIGPIPE, SIG_IGN);  // as ferry-agent does
  int fds[2];
  BOOST_REQUIRE(::pipe(fds) == 0);
  ::close(fds[0]);
  FrameWriter writer(fds[1]);
  BOOST_TEST(!writer.send_notification("run/output", {{"x", 1}}));
  BOOST_TEST(writer.broken());
  BOOST_TEST(!writer.send_raw("more"));
  ::close(fds[1]);
}
