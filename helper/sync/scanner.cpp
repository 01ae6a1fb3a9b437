// Parallel tree walk. Work items (directories to list, files to hash) go through one queue
// shared by `threads` workers; the walk ends when the queue is empty and no worker is busy.
#include "helper/sync/scanner.hpp"

#include <fcntl.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "common/xxhash_inline.hpp"

#include "common/dir_reader.hpp"
#include "common/file_times.hpp"
#include "common/full_io.hpp"
#include "common/dir_at.hpp"
#include "common/unique_fd.hpp"
#include "helper/sync/file_index.hpp"

namespace ferry::sync {
namespace {

namespace posix = ferry::posix;

constexpr std::size_t kReadChunk = 256u << 10;
constexpr std::uint64_t kInlineHashLimit = 64u << 10;  // smaller files are hashed by the lister

using posix::FileKind;
using posix::FileStat;
using posix::UniqueFd;

std::string parent_of(const std::string& rel) {
  const auto slash = rel.rfind('/');
  return slash == std::string::npos ? std::string() : rel.substr(0, slash);
}

struct Item {
  std::string rel;
  bool is_dir = false;
  FileStat st;
};

struct Shard {
  TreeState entries;
  std::vector<std::string> unstable;
  std::vector<ScanIssue> issues;
  ScanStats stats;
};

class Walker {
 public:
  Walker(int root_fd, const IgnoreMatcher& ignore, FileIndex* index, const ScanOptions& options)
      : root_fd_(root_fd), ignore_(ignore), index_(index), options_(options) {}

  // For scan_paths: each path on its own, parents walked without following symlinks.
  ScanResult run_paths(const std::vector<std::string>& paths) {
    Shard shard;
    for (const std::string& rel : paths) {
      if (rel.empty() || rel.front() == '/') continue;
      UniqueFd dir = posix::open_dir_nofollow(root_fd_, "");
      std::size_t pos = 0;
      bool ok = true;
      for (std::size_t slash; (slash = rel.find('/', pos)) != std::string::npos; pos = slash + 1) {
        const std::string part = rel.substr(pos, slash - pos);
        if (part.empty() || part == "." || part == "..") ok = false;
        dir = ok ? posix::open_dir_nofollow(dir.get(), part) : UniqueFd();
        if (!dir) {
          ok = false;
          break;
        }
      }
      const std::string name = rel.substr(pos);
      const std::string parent = parent_of(rel);
      if (ok && !name.empty() && name != "." && name != ".." && (parent.empty() || !ignore_.is_ignored(parent, true))) {
        FileStat st;
        const int err = posix::stat_nofollow(dir.get(), name.c_str(), st);
        record(dir.get(), name.c_str(), rel, err, st, shard, false);
      }
    }
    ScanResult result;
    result.entries = std::move(shard.entries);
    result.unstable = std::move(shard.unstable);
    result.issues = std::move(shard.issues);
    result.stats = shard.stats;
    return result;
  }

  ScanResult run() {
    queue_.push_back(Item{"", true, {}});
    const unsigned n = options_.threads ? options_.threads
                                        : std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
    std::vector<Shard> shards(n);
    std::vector<std::thread> threads;
    for (unsigned i = 1; i < n; ++i) threads.emplace_back([this, &shards, i] { work(shards[i]); });
    work(shards[0]);
    for (auto& t : threads) t.join();
    ScanResult result;
    for (auto& s : shards) {
      result.entries.merge(s.entries);
      result.unstable.insert(result.unstable.end(), s.unstable.begin(), s.unstable.end());
      result.issues.insert(result.issues.end(), s.issues.begin(), s.issues.end());
      result.stats.files += s.stats.files;
      result.stats.dirs += s.stats.dirs;
      result.stats.symlinks += s.stats.symlinks;
      result.stats.hashed += s.stats.hashed;
      result.stats.hash_cache_hits += s.stats.hash_cache_hits;
      result.stats.bytes_hashed += s.stats.bytes_hashed;
    }
    std::sort(result.unstable.begin(), result.unstable.end());
    return result;
  }

 private:
  void work(Shard& shard) {
    for (;;) {
      Item item;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [&] { return !queue_.empty() || busy_ == 0; });
        if (queue_.empty()) return;  // nothing queued and nobody who could queue more
        item = std::move(queue_.front());
        queue_.pop_front();
        ++busy_;
      }
      if (item.is_dir) list_dir(item.rel, shard);
      else hash_file(item, shard);
      {
        std::lock_guard lock(mutex_);
        --busy_;
      }
      cv_.notify_all();
    }
  }

  void push(Item item) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(item));
    }
    cv_.notify_one();
  }

  void list_dir(const std::string& rel, Shard& shard) {
    UniqueFd fd = posix::open_dir_nofollow(root_fd_, rel);
    if (!fd) {
      shard.issues.push_back({rel, std::string("cannot open directory: ") + std::strerror(errno)});
      return;
    }
    auto dir = posix::adopt_dir(std::move(fd));
    if (!dir) {
      shard.issues.push_back({rel, std::string("cannot list directory: ") + std::strerror(dir.error())});
      return;
    }
    while (auto de = dir->next()) {
      const std::string_view name = de->name;
      record(posix::dir_fd(*dir), de->name, rel.empty() ? std::string(name) : rel + "/" + std::string(name),
             de->stat_error, de->st, shard, true);
    }
  }

  // Records one directory entry, statted without following (`stat_error` its errno, or 0), and
  // queues a directory's listing when `descend`.
  void record(int dirfd, const char* name, std::string child, int stat_error, const FileStat& st, Shard& shard,
              bool descend) {
    if (stat_error != 0) {
      if (stat_error != ENOENT) shard.issues.push_back({child, std::string("cannot stat: ") + std::strerror(stat_error)});
      return;
    }
    const bool is_dir = st.kind == FileKind::directory;
    if (ignore_.is_ignored_entry(child, is_dir)) return;
    FileMeta meta;
    meta.mode = st.mode;
    meta.mtime_ns = st.mtime_ns;
    if (is_dir) {
      meta.kind = EntryKind::dir;
      ++shard.stats.dirs;
      shard.entries.emplace(child, meta);
      if (descend) push(Item{std::move(child), true, st});
    } else if (st.kind == FileKind::symlink) {
      auto target = posix::read_link_at(dirfd, name, static_cast<std::size_t>(st.size));
      if (!target) {
        shard.issues.push_back({child, "cannot read symlink (or it changed while read)"});
        return;
      }
      meta.kind = EntryKind::symlink;
      meta.size = target->size();
      meta.link_target = std::move(*target);
      ++shard.stats.symlinks;
      shard.entries.emplace(std::move(child), std::move(meta));
    } else if (st.kind == FileKind::regular) {
      meta.kind = EntryKind::file;
      meta.size = st.size;
      ++shard.stats.files;
      if (!options_.hash_files) {
        shard.entries.emplace(std::move(child), std::move(meta));
      } else if (auto cached = index_ ? index_->lookup(child, index_key_of(st)) : std::nullopt) {
        meta.hash = cached;
        ++shard.stats.hash_cache_hits;
        shard.entries.emplace(std::move(child), std::move(meta));
      } else if (options_.hash_if && !options_.hash_if(child, meta.size)) {
        shard.entries.emplace(std::move(child), std::move(meta));
      } else if (meta.size <= kInlineHashLimit || !descend) {
        hash_file(Item{std::move(child), false, st}, shard);
      } else {
        push(Item{std::move(child), false, st});
      }
    } else {
      shard.issues.push_back({child, "special file (fifo, socket or device) skipped"});
    }
  }

  // Hashes a file and checks it did not change between the listing, the open and the end of
  // the read (size, mtime, ctime, inode): a file being written is reported, never half-hashed.
  void hash_file(const Item& item, Shard& shard) {
    UniqueFd held(posix::open_at(root_fd_, item.rel, O_RDONLY));
    const int fd = held.get();
    if (fd < 0) {
      if (errno == ENOENT || errno == ELOOP) shard.unstable.push_back(item.rel);
      else shard.issues.push_back({item.rel, std::string("cannot open: ") + std::strerror(errno)});
      return;
    }
    FileStat before, after;
    auto same = [](const FileStat& a, const FileStat& b) {
      return a.ino == b.ino && a.size == b.size && a.mtime_ns == b.mtime_ns && a.ctime_ns == b.ctime_ns;
    };
    const std::int64_t hashed_at = now_ns();
    bool ok = posix::stat_fd(fd, before) == 0 && same(before, item.st);
    XXH3_state_t* state = XXH3_createState();
    XXH3_128bits_reset(state);
    std::vector<char> buf(kReadChunk);
    std::uint64_t total = 0;
    while (ok) {
      const ssize_t n = posix::read_full(fd, buf.data(), buf.size());
      if (n < 0) {
        shard.issues.push_back({item.rel, std::string("cannot read: ") + std::strerror(errno)});
        XXH3_freeState(state);
        return;
      }
      XXH3_128bits_update(state, buf.data(), static_cast<std::size_t>(n));
      total += static_cast<std::uint64_t>(n);
      if (static_cast<std::size_t>(n) < buf.size()) break;  // end of file
    }
    if (options_.after_read_hook) options_.after_read_hook(item.rel);
    ok = ok && posix::stat_fd(fd, after) == 0 && same(before, after) && total == after.size;
    held.reset();
    if (!ok) {
      XXH3_freeState(state);
      shard.unstable.push_back(item.rel);
      return;
    }
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(state));
    XXH3_freeState(state);
    Hash128 h;
    std::copy(std::begin(c.digest), std::end(c.digest), h.begin());
    if (index_) index_->store(item.rel, index_key_of(after), h, hashed_at);
    ++shard.stats.hashed;
    shard.stats.bytes_hashed += total;
    FileMeta meta;
    meta.kind = EntryKind::file;
    meta.mode = after.mode;
    meta.size = total;
    meta.mtime_ns = after.mtime_ns;
    meta.hash = h;
    shard.entries.emplace(item.rel, std::move(meta));
  }

  int root_fd_;
  const IgnoreMatcher& ignore_;
  FileIndex* index_;
  ScanOptions options_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  unsigned busy_ = 0;
};

}  // namespace

std::expected<ScanResult, std::string> scan_tree(const std::filesystem::path& root, const IgnoreMatcher& ignore,
                                                 FileIndex* index, const ScanOptions& options) {
  const UniqueFd root_fd = posix::open_dir_path(root);
  if (!root_fd) return std::unexpected("cannot open " + root.string() + ": " + std::strerror(errno));
  Walker walker(root_fd.get(), ignore, index, options);
  return walker.run();
}

std::expected<ScanResult, std::string> scan_paths(const std::filesystem::path& root, const IgnoreMatcher& ignore,
                                                  FileIndex* index, const std::vector<std::string>& paths,
                                                  const ScanOptions& options) {
  const UniqueFd root_fd = posix::open_dir_path(root);
  if (!root_fd) return std::unexpected("cannot open " + root.string() + ": " + std::strerror(errno));
  Walker walker(root_fd.get(), ignore, index, options);
  return walker.run_paths(paths);
}

}  // namespace ferry::sync
