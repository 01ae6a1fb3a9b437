// ProgressBar (see progress_bar.hpp): one '\r'-redrawn line; "\r\033[K" erases it.
#include "helper/cli/progress_bar.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/full_io.hpp"
#include "common/terminal.hpp"

namespace ferry::cli {
namespace {

std::string bytes(std::uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  if (n < (1u << 20)) return fmt::format("{:.1f} KiB", n / 1024.0);
  if (n < (1u << 30)) return fmt::format("{:.1f} MiB", n / 1048576.0);
  return fmt::format("{:.2f} GiB", n / 1073741824.0);
}

std::string duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 99 * 3600) return "--:--";
  auto s = static_cast<long>(std::lround(seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

int terminal_width(int fd) {
  const auto size = platform::terminal_size(fd);
  return size && size->columns >= 20 ? size->columns : 80;
}

void write_all(int fd, const std::string& s) {
  (void)posix::write_full(fd, s.data(), s.size());  // a closed terminal: nothing to draw on
}

}  // namespace

ProgressBar::ProgressBar(std::string verb, int fd, bool force, std::function<Clock::time_point()> now)
    : verb_(std::move(verb)), fd_(fd), enabled_(force || platform::is_terminal(fd)), now_(std::move(now)) {}

ProgressBar::~ProgressBar() { clear(); }

std::string ProgressBar::render(std::string_view verb, std::uint64_t done, std::uint64_t total, double rate, int width) {
  const double fraction = total ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 1.0;
  const int pct = static_cast<int>(fraction * 100);
  std::string tail = fmt::format(" {} / {}", bytes(done), bytes(total));
  if (rate > 0) {
    tail += fmt::format("  {}/s", bytes(static_cast<std::uint64_t>(rate)));
    tail += "  ETA " + duration(done >= total ? 0 : static_cast<double>(total - done) / rate);
  }
  std::string head = fmt::format("{} {:3}% ", verb, pct);
  int bar = width - 1 - static_cast<int>(head.size() + tail.size()) - 2;
  if (bar < 5) return (head + tail).substr(0, static_cast<std::size_t>(std::max(width - 1, 0)));
  bar = std::min(bar, 40);
  const int filled = static_cast<int>(fraction * bar);
  return head + "[" + std::string(static_cast<std::size_t>(filled), '#') + std::string(static_cast<std::size_t>(bar - filled), '.') +
         "]" + tail;
}

void ProgressBar::update(std::uint64_t done, std::uint64_t total) {
  if (!enabled_ || total == 0) return;
  std::lock_guard lock(mu_);
  const auto now = now_();
  if (!started_) {
    started_ = true;
    start_ = now;
  } else if (done < total && now - last_draw_ < kRedrawEvery) {
    return;
  }
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0.2 ? static_cast<double>(done) / elapsed : 0.0;
  std::string line = "\r";  // appended, not concatenated: GCC 12 -Wrestrict false positive
  line += render(verb_, done, total, rate, terminal_width(fd_));
  line += "\033[K";
  write_all(fd_, line);
  drawn_ = true;
  ++redraws_;
}

void ProgressBar::status(std::string_view text) {
  if (!enabled_) return;
  std::lock_guard lock(mu_);
  const auto now = now_();
  if (drawn_ && now - last_draw_ < kRedrawEvery) return;
  last_draw_ = now;
  std::string line = "\r";
  line += verb_;
  line += "  ";
  line += text;
  const auto width = static_cast<std::size_t>(std::max(terminal_width(fd_) - 1, 10));
  if (line.size() > width + 1) line.resize(width + 1);
  line += "\033[K";
  write_all(fd_, line);
  drawn_ = true;
  ++redraws_;
}

void ProgressBar::clear() {
  std::lock_guard lock(mu_);
  if (!drawn_) return;
  write_all(fd_, "\r\033[K");
  drawn_ = false;
}

int ProgressBar::redraws() const {
  std::lock_guard lock(mu_);
  return redraws_;
}

std::function<void(std::uint64_t, std::uint64_t)> progress_callback(const std::shared_ptr<ProgressBar>& bar) {
  if (!bar || !bar->enabled()) return {};
  return [bar](std::uint64_t done, std::uint64_t total) { bar->update(done, total); };
}

std::function<void(std::uint64_t)> listing_callback(const std::shared_ptr<ProgressBar>& bar) {
  if (!bar || !bar->enabled()) return {};
  return [bar](std::uint64_t listed) { bar->status(fmt::format("listing the remote: {} entries", listed)); };
}

}  // namespace ferry::cli
