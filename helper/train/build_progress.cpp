// See build_progress.hpp.
#include "helper/train/build_progress.hpp"

#include "helper/train/train_progress.hpp"

#include <algorithm>
#include <charconv>

namespace ferry::training {
namespace {

bool parse_int(std::string_view s, int& out) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

void BuildProgressParser::set_stage(std::string stage, Clock::time_point now) {
  progress_.stage = std::move(stage);
  if (progress_.stage == "compile" && !compile_start_) compile_start_ = now;
}

bool BuildProgressParser::feed(std::string_view line, Clock::time_point now) {
  progress_.elapsed_seconds = std::chrono::duration<double>(now - start_).count();
  constexpr std::string_view kBox = "ferry-box: ";
  if (line.starts_with(kBox)) {
    std::string_view rest = line.substr(kBox.size());
    if (rest.starts_with("units ")) {
      parse_int(rest.substr(6), units_);
      if (progress_.total == 0) progress_.total = units_;
      return false;
    }
    if (rest.starts_with("stage ")) set_stage(std::string(rest.substr(6)), now);
    else if (rest.starts_with("ready ")) {
      std::string_view path = rest.substr(6);
      path = path.substr(0, path.find(' '));
      ready_ = std::string(path);
      set_stage("ready", now);
    } else if (rest.starts_with("waiting")) set_stage("waiting", now);
    else return false;
    progress_.message = std::string(rest);
    return true;
  }
  int done = -1, total = 0;
  if (line.starts_with('[')) {
    const auto close = line.find(']');
    std::string_view inside = line.substr(1, close == std::string_view::npos ? 0 : close - 1);
    if (auto slash = inside.find('/'); slash != std::string_view::npos) {
      // Ninja: "[N/M] what"; N steps have started, N-1 are surely done.
      if (!parse_int(inside.substr(0, slash), done) || !parse_int(inside.substr(slash + 1), total)) done = -1;
    } else if (line.find("Building CXX object") != std::string_view::npos) {
      done = progress_.done + 1;  // Make: count the units as they start
      total = units_;
    }
  }
  if (done < 0) return false;
  if (!compile_start_) set_stage("compile", now);
  progress_.stage = "compile";
  progress_.done = done;
  if (total > 0) progress_.total = total;
  const double spent = std::chrono::duration<double>(now - *compile_start_).count();
  if (progress_.done >= 2 && progress_.total > progress_.done && spent > 0)
    progress_.eta_seconds = spent / (progress_.done - 1) * (progress_.total - progress_.done + 1);
  else
    progress_.eta_seconds.reset();
  const auto space = line.find(' ');
  progress_.message = std::string(space == std::string_view::npos ? line : line.substr(space + 1));
  return true;
}

std::string BuildProgressParser::bar(std::size_t width) const {
  // Built by appending: GCC 12 warns (-Wrestrict, falsely) on `literal + std::to_string()` chains here.
  std::string out = "building ferry-train";
  if (progress_.stage != "compile" || progress_.total == 0) {
    out.append(" on the box: ").append(progress_.message.empty() ? progress_.stage : progress_.message);
    out.append(" (").append(format_duration(progress_.elapsed_seconds)).append(")");
    return out;
  }
  std::string tail(" ");
  tail.append(std::to_string(progress_.done)).append("/").append(std::to_string(progress_.total));
  if (progress_.eta_seconds) tail.append(", about ").append(format_duration(*progress_.eta_seconds)).append(" left");
  else tail.append(", estimating");
  const std::size_t fixed = out.size() + tail.size() + 3;
  const std::size_t cells = width > fixed + 10 ? std::min<std::size_t>(width - fixed, 40) : 10;
  const std::size_t filled = cells * static_cast<std::size_t>(progress_.percent()) / 100;
  out.append(" [").append(filled, '#').append(cells - filled, ' ').append("]").append(tail);
  return out;
}

}  // namespace ferry::training
