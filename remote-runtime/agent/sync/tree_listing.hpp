// The remote half of the planner's input: what is under the agent root now (kind, mode, size,
// mtime in ns, symlink target and, where asked, the xxh3-128). Walked without following any
// symlink and without leaving the root's filesystem (a directory on another device, a mount, is
// listed but not entered, as find -xdev and rsync -x do); ferry's own temp files are left out; a
// caller-given predicate prunes subtrees the helper does not need (protected datasets, excluded
// paths), so their size never costs a stat. A listing can be taken in pages (TreeLister), so a
// big tree reports progress and can be stopped between pages.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/dir_reader.hpp"
#include "remote-runtime/agent/sync/file_writer.hpp"

namespace ferry::agent::sync {

enum class TreeEntryKind : std::uint8_t { file = 0, dir = 1, symlink = 2 };  // as ferry::sync::EntryKind

struct TreeEntry {
  std::string path;  // relative, '/'-separated
  TreeEntryKind kind = TreeEntryKind::file;
  std::uint32_t mode = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::string link_target;
  std::optional<Hash128> hash;
};

struct ListOptions {
  // Directories for which this returns true are neither listed nor entered.
  std::function<bool(const std::string& path)> prune;
  // Files for which this returns true are hashed (e.g. paths the helper has no record of, so
  // a first sync into a populated directory can adopt identical files instead of flagging them).
  std::function<bool(const std::string& path)> hash_if;
  // Files over this size get only a hash the cache already holds (ListParams::hash_at_most).
  std::uint64_t hash_at_most = UINT64_MAX;
};

// The xxh3-128 of `name` under `dirfd` (or an absolute name), read in pieces, never following a
// symlink. A big one (`listed_size`) comes from the hash cache when this very file was hashed
// before, else is read and kept there for a readDelta that follows; `cached_only`: the cache's
// answer or nothing. nullopt when it cannot be read.
std::optional<Hash128> hash_file_at(int dirfd, const char* name, std::uint64_t listed_size, bool cached_only = false);

// A listing taken a page at a time. Holds one open directory per level of the walk (depth-first,
// so descriptors grow with the tree's depth, not its width) until done or destroyed.
class TreeLister {
 public:
  using Clock = std::chrono::steady_clock;

  static std::expected<TreeLister, WriteError> open(const FileWriter& writer, ListOptions options = {});
  TreeLister(TreeLister&&) noexcept = default;
  TreeLister& operator=(TreeLister&&) noexcept = default;

  // The next entries, unsorted: stops after `max_entries`, or at the first entry after
  // `deadline` (a single file's hash is never cut short), or when the walk is done.
  std::vector<TreeEntry> next(std::size_t max_entries, Clock::time_point deadline = Clock::time_point::max());
  bool done() const { return stack_.empty(); }
  // Directories listed but not entered because they are on another filesystem (mount points),
  // since the last call (taken: the caller reports them once).
  std::vector<std::string> take_other_filesystems();
  std::uint64_t listed() const { return listed_; }

 private:
  TreeLister() = default;
  struct Level {
    ferry::posix::DirReader dir;
    std::string rel;
  };
  std::vector<Level> stack_;
  std::uint64_t root_dev_ = 0;
  ListOptions options_;
  std::vector<std::string> other_filesystems_;
  std::uint64_t listed_ = 0;
};

// The whole listing at once, sorted by path. Unreadable entries are skipped; the walk itself
// failing is an error.
std::expected<std::vector<TreeEntry>, WriteError> list_tree(const FileWriter& writer, const ListOptions& options = {});

}  // namespace ferry::agent::sync
