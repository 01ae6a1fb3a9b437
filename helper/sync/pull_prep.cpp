// A pull's look at its big local copies during the listing: see pull_prep.hpp.
#include "helper/sync/pull_prep.hpp"

#include <algorithm>
#include <cerrno>
#include <future>

#include "common/file_times.hpp"
#include "common/full_io.hpp"
#include "protocol/delta/parallel_signature.hpp"

namespace ferry::sync {
namespace {

constexpr std::size_t kPiece = 1u << 20;

}  // namespace

std::optional<PreparedCopy> prepare_copy(int fd, delta::SignatureParams params, unsigned threads, const std::atomic<bool>& stop) {
  posix::FileStat before;
  if (posix::stat_fd(fd, before) != 0 || before.kind != posix::FileKind::regular) return std::nullopt;
  PreparedCopy out;
  out.key = index_key_of(before);
  out.read_at_ns = now_ns();
  out.params = params;
  const std::uint64_t size = out.key.size;
  std::atomic<bool> failed{false};
  const delta::ReadAt read_at = [&](std::uint64_t at, std::uint8_t* buf, std::size_t n) -> ssize_t {
    if (stop.load(std::memory_order_relaxed) || failed.load(std::memory_order_relaxed)) {
      errno = ECANCELED;
      return -1;
    }
    return posix::pread_full(fd, buf, n, at);
  };
  // The hash reads the file front to back beside the signers' shares: both read from the page
  // cache, and neither waits for the other.
  auto hashing = std::async(std::launch::async, [&]() -> std::optional<Hash128> {
    delta::Hash128Stream h;
    std::vector<std::uint8_t> buf(static_cast<std::size_t>(std::min<std::uint64_t>(std::max<std::uint64_t>(size, 1), kPiece)));
    for (std::uint64_t at = 0; at < size;) {
      const ssize_t got = read_at(at, buf.data(), static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), size - at)));
      if (got <= 0) {
        failed = true;
        return std::nullopt;
      }
      h.update(delta::Bytes(buf.data(), static_cast<std::size_t>(got)));
      at += static_cast<std::uint64_t>(got);
    }
    return h.digest();
  });
  const auto signed_ok = delta::sign_in_parallel(read_at, params, 0, size, size, threads, out.signature);
  if (!signed_ok) failed = true;
  const std::optional<Hash128> hash = hashing.get();
  posix::FileStat after;
  if (!signed_ok || !hash || posix::stat_fd(fd, after) != 0 || !(index_key_of(after) == out.key)) return std::nullopt;
  out.hash = *hash;
  return out;
}

PullPrep::PullPrep(std::vector<Job> jobs, unsigned threads) : jobs_(std::move(jobs)), threads_(std::max(threads, 1u)) {
  if (!jobs_.empty()) worker_ = std::jthread([this] { run(); });
}

PullPrep::~PullPrep() {
  stop();
  if (worker_.joinable()) worker_.join();
}

void PullPrep::run() {
  for (const Job& job : jobs_) {
    std::optional<PreparedCopy> got;
    try {
      if (!stop_) got = prepare_copy(job.fd.get(), job.params, threads_, stop_);
    } catch (const std::exception&) {
      // No thread to spare (std::system_error) or no memory: the pull reads the copy itself.
    }
    std::lock_guard lock(mu_);
    done_[job.path] = std::move(got);
    done_cv_.notify_all();
  }
}

bool PullPrep::has(const std::string& path) const {
  return std::any_of(jobs_.begin(), jobs_.end(), [&](const Job& j) { return j.path == path; });
}

std::optional<PreparedCopy> PullPrep::wait_for(const std::string& path) {
  if (!has(path)) return std::nullopt;
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [&] { return done_.contains(path); });
  return done_.at(path);
}

}  // namespace ferry::sync
