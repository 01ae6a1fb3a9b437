// RunFollower: exact resume of a run's output stream.
#include "helper/run/run_follower.hpp"

#include <spdlog/spdlog.h>

namespace ferry::run {

namespace {
// The agent re-sent from an offset past what we had this many times in a row: give up rather
// than spin.
constexpr int kMaxFruitlessAttaches = 5;
}  // namespace

RunFollower::RunFollower(RunClient& client, std::string id, std::uint64_t offset, Sink sink)
    : client_(client), id_(std::move(id)), sink_(std::move(sink)), cursor_(offset) {
  client_.watch(id_, this);
}

RunFollower::~RunFollower() {
  client_.unwatch(id_, this);
}

void RunFollower::wake_locked() {
  cv_.notify_all();
  wake_.raise();
}

void RunFollower::drain() { wake_.take(); }

std::expected<AttachReply, ResponseError> RunFollower::attach() {
  std::uint64_t offset;
  unsigned generation;
  {
    std::lock_guard lock(mutex_);
    offset = cursor_.next();
    generation = generation_;
    needs_attach_ = false;
    if (offset == next_at_last_attach_ && attaches_without_progress_ > 0 && exit_) ++attaches_without_progress_;
    else attaches_without_progress_ = 1;
    next_at_last_attach_ = offset;
    if (attaches_without_progress_ > kMaxFruitlessAttaches) {
      failed_ = "the agent reports " + std::to_string(exit_ ? exit_->log_bytes : 0) + " log bytes for run " + id_ +
                " but sends nothing after offset " + std::to_string(offset);
      wake_locked();
      return std::unexpected(ResponseError{protocol::error_code::kIoError, *failed_, {}});
    }
  }
  auto r = client_.attach(id_, offset, static_cast<bool>(port_sink_));
  std::lock_guard lock(mutex_);
  if (!r) {
    if (r.error().code == protocol::error_code::kAgentUnavailable ||
        r.error().code == protocol::error_code::kRequestCancelled) {
      // A link restored while this call failed on the old one still needs its attach.
      needs_attach_ = generation_ != generation;
      link_down_ = !needs_attach_;
    } else {
      failed_ = r.error().message;
    }
    wake_locked();
    return r;
  }
  link_down_ = false;
  return r;
}

void RunFollower::adopt_start_attach(bool stream_live) {
  {
    std::lock_guard lock(mutex_);
    if (stream_live && generation_ == 0) needs_attach_ = false;
  }
  client_.claim(id_, this);
}

void RunFollower::link_lost() {
  std::lock_guard lock(mutex_);
  link_down_ = true;
  wake_locked();
}

void RunFollower::link_restored() {
  std::lock_guard lock(mutex_);
  ++generation_;
  link_down_ = false;
  if (!(exit_ && cursor_.next() >= exit_->log_bytes)) needs_attach_ = true;
  wake_locked();
}

void RunFollower::fail(std::string why) {
  std::lock_guard lock(mutex_);
  if (!failed_) failed_ = std::move(why);
  wake_locked();
}

bool RunFollower::needs_attach() const {
  std::lock_guard lock(mutex_);
  return needs_attach_ && !failed_;
}

bool RunFollower::link_down() const {
  std::lock_guard lock(mutex_);
  return link_down_;
}

bool RunFollower::finished() const {
  std::lock_guard lock(mutex_);
  return exit_ && cursor_.next() >= exit_->log_bytes;
}

std::optional<RunExit> RunFollower::exit() const {
  std::lock_guard lock(mutex_);
  return exit_;
}

std::optional<std::string> RunFollower::failed() const {
  std::lock_guard lock(mutex_);
  return failed_;
}

std::uint64_t RunFollower::next_offset() const {
  std::lock_guard lock(mutex_);
  return cursor_.next();
}

std::uint64_t RunFollower::delivered_bytes() const {
  std::lock_guard lock(mutex_);
  return cursor_.delivered_bytes();
}

RunFollower::Event RunFollower::wait(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  auto done = [&] { return (exit_ && cursor_.next() >= exit_->log_bytes) || failed_ || needs_attach_; };
  if (!cv_.wait_until(lock, deadline, done)) return Event::timeout;
  if (failed_) return Event::failed;
  if (exit_ && cursor_.next() >= exit_->log_bytes) return Event::finished;
  return Event::needs_attach;
}

void RunFollower::on_output(const OutputRecord& record) {
  std::lock_guard lock(mutex_);
  switch (cursor_.accept(record)) {
    case OutputCursor::Verdict::deliver:
      attaches_without_progress_ = 0;
      if (sink_) sink_(record);
      break;
    case OutputCursor::Verdict::duplicate:
      break;
    case OutputCursor::Verdict::gap:
      spdlog::debug("run {}: record at {} but {} expected; re-attaching", id_, record.offset, cursor_.next());
      needs_attach_ = true;
      wake_locked();
      break;
  }
}

void RunFollower::on_port(const PortEvent& event) {
  if (port_sink_) port_sink_(event);
}

void RunFollower::on_exited(const RunExit& exit) {
  std::lock_guard lock(mutex_);
  exit_ = exit;
  // Everything before logBytes must have come first; if not, fetch the rest.
  if (cursor_.next() < exit.log_bytes) needs_attach_ = true;
  wake_locked();
}

}  // namespace ferry::run
