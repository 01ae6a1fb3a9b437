// The platform-neutral half of TreeWatcher (see watcher.hpp): which events count (the ignore
// rules, the ignore files themselves, directories made or moved in, directories moved away),
// the walks that cover new directories, bursts coalesced into batches, and rescans. The OS's
// watch, listing and wait are a WatchBackend (watch_backend.hpp; posix/ or windows/).
#include "helper/sync/watcher.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "helper/sync/watch_backend.hpp"

namespace ferry::sync {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string join(const std::string& dir, std::string_view name) {
  return dir.empty() ? std::string(name) : dir + "/" + std::string(name);
}

std::string_view base_name(std::string_view rel) {
  const auto slash = rel.rfind('/');
  return slash == std::string_view::npos ? rel : rel.substr(slash + 1);
}

std::string_view parent_of(std::string_view rel) {
  const auto slash = rel.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : rel.substr(0, slash);
}

bool is_ignore_file(std::string_view name) { return name == kGitignoreName || name == kFerryignoreName; }

// For messages: UTF-8 on every platform (MinGW's narrow path is not).
std::string shown(const fs::path& p) {
  const auto u8 = p.u8string();
  return std::string(u8.begin(), u8.end());
}

}  // namespace

TreeWatcher::TreeWatcher(fs::path root, std::vector<std::string> excludes, WatchOptions options)
    : root_(std::move(root)),
      excludes_(std::move(excludes)),
      options_(options),
      ignore_(IgnoreMatcher::for_tree(root_, excludes_, options_.skipped_dirs)) {}

TreeWatcher::~TreeWatcher() = default;

std::expected<std::unique_ptr<TreeWatcher>, std::string> TreeWatcher::open(fs::path root, std::vector<std::string> excludes,
                                                                           WatchOptions options) {
  std::unique_ptr<TreeWatcher> w(new TreeWatcher(std::move(root), std::move(excludes), options));
  auto backend = WatchBackend::open(w->root_);
  if (!backend) return std::unexpected(backend.error());
  w->backend_ = std::move(*backend);
  if (auto started = w->start(); !started) return std::unexpected(started.error());
  return w;
}

std::expected<void, std::string> TreeWatcher::start() {
  ignored_dirs_.clear();
  if (auto restarted = backend_->restart(); !restarted) return std::unexpected(restarted.error());
  if (auto added = add_tree("", nullptr); !added) return std::unexpected("watch " + shown(root_) + ": " + added.error());
  return {};
}

bool TreeWatcher::watches(std::string_view rel) const { return backend_->watches(rel); }
std::size_t TreeWatcher::watched_directories() const { return backend_->watched_directories(); }

std::expected<void, std::string> TreeWatcher::add_tree(const std::string& rel, std::set<std::string>* found) {
  std::vector<std::string> stack{rel};
  std::vector<WatchEntry> entries;
  while (!stack.empty()) {
    std::string dir = std::move(stack.back());
    stack.pop_back();
    // The watch first, then the listing: an entry created in between is seen by one or both.
    if (auto watched = backend_->watch_directory(dir); !watched) {
      if (dir.empty()) return std::unexpected(watched.error().message);  // the root: no watch at all
      if (!watched.error().gone) spdlog::warn("watch '{}': {}", dir, watched.error().message);
      continue;
    }
    entries.clear();
    if (!backend_->list(dir, entries)) continue;
    for (auto& e : entries) {
      std::string child = join(dir, e.name);
      if (ignore_.is_ignored_entry(child, e.is_dir)) {
        if (e.is_dir) ignored_dirs_.insert(std::move(child));
        continue;
      }
      if (found) found->insert(child);
      if (e.is_dir) stack.push_back(std::move(child));
    }
  }
  return {};
}

void TreeWatcher::absorb(WatchEvent& ev) {
  switch (ev.kind) {
    case WatchEvent::Kind::overflow:
      pending_rescan_ = true;
      rescan_reason_ = std::move(ev.reason);
      return;
    case WatchEvent::Kind::root_gone:
      root_gone_ = true;
      return;
    default:
      break;
  }
  const std::string& rel = ev.path;
  const bool went = ev.kind == WatchEvent::Kind::removed || ev.kind == WatchEvent::Kind::moved_from;
  const bool came = ev.kind == WatchEvent::Kind::created || ev.kind == WatchEvent::Kind::moved_to;
  bool is_dir = ev.is_dir.value_or(false);
  if (went) {
    // A removal the OS did not type (Windows) is a directory if it was an ignored one we met.
    if (auto it = ignored_dirs_.find(rel); it != ignored_dirs_.end()) {
      if (!ev.is_dir) is_dir = true;
      ignored_dirs_.erase(it);
    }
  }
  if (is_ignore_file(base_name(rel))) {
    // The rules changed: what is ignored now is only known after a new walk. (Inside an ignored
    // directory, which only a Windows subtree watch reports, it decides nothing.)
    const std::string_view parent = parent_of(rel);
    if (parent.empty() || !ignore_.is_ignored(parent, true)) {
      pending_rescan_ = true;
      rescan_reason_ = "'" + rel + "' changed";
    }
    return;
  }
  if (ignore_.is_ignored(rel, is_dir)) {
    const std::string_view parent = parent_of(rel);
    if (is_dir && came && (parent.empty() || !ignore_.is_ignored(parent, true))) ignored_dirs_.insert(rel);
    return;
  }
  pending_.insert(rel);
  if (is_dir && came) (void)add_tree(rel, &pending_);  // fails only for the root
  if (is_dir && ev.kind == WatchEvent::Kind::moved_from) {
    // Its files left with it, unseen one by one: only a full push finds them all.
    pending_rescan_ = true;
    rescan_reason_ = "directory '" + rel + "' moved away";
  }
}

bool TreeWatcher::drain(bool all_before_now, std::string& error) {
  if (!injected_error_.empty()) {
    error = injected_error_;
    return false;
  }
  std::vector<WatchEvent> events;
  if (auto read = backend_->read(events, all_before_now ? WatchDrain::all_before_now : WatchDrain::ready); !read) {
    error = read.error();
    return false;
  }
  if (events.empty()) return true;
  const auto now = Clock::now();
  if (pending_.empty() && !pending_rescan_) first_event_ = now;
  last_event_ = now;
  for (auto& ev : events) absorb(ev);
  return true;
}

WatchBatch TreeWatcher::rescan(std::string reason) {
  ignore_ = IgnoreMatcher::for_tree(root_, excludes_, options_.skipped_dirs);
  if (auto started = start(); !started) spdlog::warn("watch: rescan: {}", started.error());
  pending_.clear();
  pending_rescan_ = false;
  rescan_reason_.clear();
  return WatchBatch{{}, true, std::move(reason)};
}

WatchBatch TreeWatcher::take_batch() {
  if (pending_rescan_ || pending_.size() > options_.max_paths) {
    std::string reason = pending_rescan_ ? rescan_reason_ : std::to_string(pending_.size()) + " paths changed";
    return rescan(std::move(reason));
  }
  WatchBatch b;
  b.paths.assign(pending_.begin(), pending_.end());
  pending_.clear();
  return b;
}

std::expected<std::optional<WatchBatch>, std::string> TreeWatcher::next(std::chrono::milliseconds timeout) {
  const auto give_up = Clock::now() + timeout;
  for (;;) {
    const auto now = Clock::now();
    const bool have = !pending_.empty() || pending_rescan_;
    if (have && (now >= last_event_ + options_.quiet || now >= first_event_ + options_.max_delay)) return take_batch();
    if (!have && now >= give_up) return std::nullopt;
    const auto until = have ? std::min(last_event_ + options_.quiet, first_event_ + options_.max_delay) : give_up;
    auto woke = backend_->wait(std::max(std::chrono::ceil<std::chrono::milliseconds>(until - now), std::chrono::milliseconds(0)));
    if (!woke) return std::unexpected(woke.error());
    if (*woke == WatchWake::stopped) return std::nullopt;  // and so is every later next()
    if (*woke == WatchWake::events) {
      std::string error;
      if (!drain(false, error)) return std::unexpected(error);
      if (root_gone_) return std::unexpected(shown(root_) + " was deleted or moved");
    }
  }
}

std::expected<WatchBatch, std::string> TreeWatcher::take_pending() {
  std::string error;
  if (!drain(true, error)) return std::unexpected(error);
  if (root_gone_) return std::unexpected(shown(root_) + " was deleted or moved");
  const bool restarts = pending_rescan_ || pending_.size() > options_.max_paths;
  WatchBatch b = take_batch();
  if (restarts && !watches("")) return std::unexpected("watch " + shown(root_) + " could not be restarted");
  return b;
}

void TreeWatcher::stop() { backend_->stop(); }

}  // namespace ferry::sync
