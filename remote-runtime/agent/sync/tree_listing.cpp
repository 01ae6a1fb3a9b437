// Remote tree listing for the planner; see tree_listing.hpp.
#include "remote-runtime/agent/sync/tree_listing.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "common/xxhash_inline.hpp"

#include "common/full_io.hpp"
#include "common/dir_at.hpp"
#include "remote-runtime/agent/sync/hash_cache.hpp"

namespace ferry::agent::sync {
using ferry::posix::UniqueFd;

std::optional<Hash128> hash_file_at(int dirfd, const char* name, std::uint64_t listed_size, bool cached_only) {
  const UniqueFd fd(::openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return std::nullopt;
  struct stat before {};
  const bool cacheable = listed_size >= kHashCacheMinSize && ::fstat(fd.get(), &before) == 0;
  if (cacheable)
    if (auto known = known_hash(before)) return known;
  if (cached_only) return std::nullopt;
  const std::int64_t began = realtime_ns();
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  std::vector<char> buf(1u << 18);
  bool ok = true;
  for (;;) {
    const ssize_t n = ferry::posix::read_full(fd.get(), buf.data(), buf.size());
    if (n < 0) ok = false;
    if (n <= 0) break;
    XXH3_128bits_update(st, buf.data(), static_cast<std::size_t>(n));
    if (static_cast<std::size_t>(n) < buf.size()) break;  // end of file
  }
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
  XXH3_freeState(st);
  if (!ok) return std::nullopt;
  Hash128 h;
  std::copy(std::begin(c.digest), std::end(c.digest), h.begin());
  if (struct stat after {}; cacheable && ::fstat(fd.get(), &after) == 0) remember_hash(before, after, began, h);
  return h;
}

std::expected<TreeLister, WriteError> TreeLister::open(const FileWriter& writer, ListOptions options) {
  UniqueFd root(::open(writer.root().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) {
    return std::unexpected(WriteError{WriteErrc::io, "open root " + writer.root().string() + ": " + std::strerror(errno)});
  }
  struct stat st {};
  if (::fstat(root.get(), &st) != 0) {
    return std::unexpected(WriteError{WriteErrc::io, "stat root " + writer.root().string() + ": " + std::strerror(errno)});
  }
  auto d = ferry::posix::adopt_dir(std::move(root));
  if (!d) {
    return std::unexpected(WriteError{WriteErrc::io, "read root " + writer.root().string() + ": " + std::strerror(d.error())});
  }
  TreeLister l;
  l.root_dev_ = st.st_dev;
  l.options_ = std::move(options);
  l.stack_.push_back(Level{std::move(*d), ""});
  return l;
}

std::vector<std::string> TreeLister::take_other_filesystems() { return std::exchange(other_filesystems_, {}); }

std::vector<TreeEntry> TreeLister::next(std::size_t max_entries, Clock::time_point deadline) {
  std::vector<TreeEntry> out;
  while (!stack_.empty() && out.size() < max_entries && (out.empty() || Clock::now() < deadline)) {
    Level& level = stack_.back();
    auto de = level.dir.next();
    if (!de) {
      stack_.pop_back();
      continue;
    }
    const std::string_view name = de->name;
    if (name.starts_with(kTempPrefix) || de->stat_error != 0) continue;
    const int dfd = ferry::posix::dir_fd(level.dir);
    const ferry::posix::FileStat& st = de->st;
    TreeEntry e;
    e.path = level.rel.empty() ? std::string(name) : level.rel + "/" + std::string(name);
    e.mode = st.mode;
    e.mtime_ns = st.mtime_ns;
    std::optional<Level> enter;
    if (st.kind == ferry::posix::FileKind::directory) {
      if (options_.prune && options_.prune(e.path)) continue;
      e.kind = TreeEntryKind::dir;
      if (st.dev != root_dev_) {
        // A mount point (/proc under "/", a dataset volume): listed as the directory it is, never
        // walked, so a listing stays on the mapping's own filesystem.
        other_filesystems_.push_back(e.path);
      } else {
        if (auto child = ferry::posix::open_dir_at(dfd, de->name)) enter = Level{std::move(*child), e.path};
      }
    } else if (st.kind == ferry::posix::FileKind::symlink) {
      e.kind = TreeEntryKind::symlink;
      auto target = ferry::posix::read_link_at(dfd, de->name, static_cast<std::size_t>(st.size));
      if (!target) continue;
      e.size = target->size();
      e.link_target = std::move(*target);
    } else if (st.kind == ferry::posix::FileKind::regular) {
      e.kind = TreeEntryKind::file;
      e.size = st.size;
      if (options_.hash_if && options_.hash_if(e.path)) e.hash = hash_file_at(dfd, de->name, e.size, e.size > options_.hash_at_most);
    } else {
      continue;  // fifos, sockets, devices: never sync targets
    }
    out.push_back(std::move(e));
    ++listed_;
    if (enter) stack_.push_back(std::move(*enter));  // `level` is not used past this point
  }
  return out;
}

std::expected<std::vector<TreeEntry>, WriteError> list_tree(const FileWriter& writer, const ListOptions& options) {
  auto lister = TreeLister::open(writer, options);
  if (!lister) return std::unexpected(lister.error());
  std::vector<TreeEntry> out;
  while (!lister->done()) {
    auto page = lister->next(std::size_t(-1));
    std::move(page.begin(), page.end(), std::back_inserter(out));
  }
  std::sort(out.begin(), out.end(), [](const TreeEntry& a, const TreeEntry& b) { return a.path < b.path; });
  return out;
}

}  // namespace ferry::agent::sync
