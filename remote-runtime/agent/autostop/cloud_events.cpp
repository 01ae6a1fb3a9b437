// See cloud_events.hpp.
#include "remote-runtime/agent/autostop/cloud_events.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <fstream>
#include <string>

#include <spdlog/spdlog.h>

#include "protocol/json_parse.hpp"

#include "common/private_files.hpp"

namespace ferry::agent::autostop {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Followed {
  const char* source;
  fs::path file;
  std::uintmax_t offset = 0;
};

std::uintmax_t size_of(const fs::path& file) {
  std::error_code ec;
  auto n = fs::file_size(file, ec);
  return ec ? 0 : n;
}

// Sends each complete line past f.offset; a half-written last line waits for its newline.
void deliver_new_lines(Followed& f, const CloudEventTail::Send& send) {
  const auto size = size_of(f.file);
  if (size < f.offset) f.offset = 0;  // replaced by a shorter file: read it from the start
  if (size == f.offset) return;
  std::ifstream in(f.file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(f.offset));
  std::string chunk(size - f.offset, '\0');
  in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
  chunk.resize(static_cast<std::size_t>(in.gcount()));
  std::size_t start = 0;
  for (auto nl = chunk.find('\n'); nl != std::string::npos; nl = chunk.find('\n', start)) {
    auto event = protocol::parse_json_text(std::string_view(chunk).substr(start, nl - start));
    start = nl + 1;
    if (event && event->is_object()) send(json{{"source", f.source}, {"event", std::move(*event)}});
  }
  f.offset += start;
}

}  // namespace

CloudEventTail::CloudEventTail(fs::path state_dir, Send send) : state_dir_(std::move(state_dir)), send_(std::move(send)) {
  inotify_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (::pipe2(stop_, O_CLOEXEC | O_NONBLOCK) != 0) stop_[0] = stop_[1] = -1;
  std::error_code ec;
  for (const char* dir : {"spot", "autostop"}) {
    ec = ferry::posix::make_private_dirs(state_dir_ / dir);
    if (inotify_ >= 0 && ::inotify_add_watch(inotify_, (state_dir_ / dir).c_str(), IN_MODIFY | IN_CREATE | IN_MOVED_TO) < 0)
      spdlog::warn("cloud events: cannot watch {}: {}", (state_dir_ / dir).string(), std::strerror(errno));
  }
  // The starting offsets are taken here, not on the thread: a line written right after the
  // constructor returns is news.
  const std::uintmax_t spot = size_of(state_dir_ / "spot" / "events.jsonl");
  const std::uintmax_t autostop = size_of(state_dir_ / "autostop" / "events.jsonl");
  thread_ = std::jthread([this, spot, autostop] { loop(spot, autostop); });
}

CloudEventTail::~CloudEventTail() {
  if (stop_[1] >= 0) {
    char c = 1;
    [[maybe_unused]] auto n = ::write(stop_[1], &c, 1);
  }
  if (thread_.joinable()) thread_.join();
  for (int fd : {inotify_, stop_[0], stop_[1]})
    if (fd >= 0) ::close(fd);
}

void CloudEventTail::loop(std::uintmax_t spot_offset, std::uintmax_t autostop_offset) {
  std::array<Followed, 2> files{Followed{"spot", state_dir_ / "spot" / "events.jsonl", spot_offset},
                                Followed{"autostop", state_dir_ / "autostop" / "events.jsonl", autostop_offset}};
  while (true) {
    pollfd p[2] = {{inotify_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
    // Without inotify (a full watch table) the files are looked at every second instead.
    const int n = ::poll(p, 2, inotify_ >= 0 ? 5000 : 1000);
    if (n < 0 && errno != EINTR) return;
    if (p[1].revents) return;
    if (p[0].revents) {
      char buf[4096];
      while (::read(inotify_, buf, sizeof buf) > 0) {
      }
    }
    for (auto& f : files) deliver_new_lines(f, send_);
  }
}

}  // namespace ferry::agent::autostop
