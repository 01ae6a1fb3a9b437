// Remote tree listing for the planner; see tree_listing.hpp.
#include "remote-runtime/agent/sync/tree_listing.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <xxhash.h>

namespace ferry::agent::sync {
namespace {

std::int64_t mtime_of(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

std::optional<Hash128> hash_file_at(int dirfd, const char* name) {
  const int fd = ::openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset(st);
  std::vector<char> buf(1u << 18);
  bool ok = true;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) ok = false;
    if (n <= 0) break;
    XXH3_128bits_update(st, buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
  XXH3_freeState(st);
  if (!ok) return std::nullopt;
  Hash128 h;
  std::copy(std::begin(c.digest), std::end(c.digest), h.begin());
  return h;
}

}  // namespace

std::expected<TreeLister, WriteError> TreeLister::open(const FileWriter& writer, ListOptions options) {
  const int root = ::open(writer.root().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) {
    return std::unexpected(WriteError{WriteErrc::io, "open root " + writer.root().string() + ": " + std::strerror(errno)});
  }
  struct stat st {};
  if (::fstat(root, &st) != 0) {
    const int err = errno;
    ::close(root);
    return std::unexpected(WriteError{WriteErrc::io, "stat root " + writer.root().string() + ": " + std::strerror(err)});
  }
  DIR* d = ::fdopendir(root);
  if (!d) {
    const int err = errno;
    ::close(root);
    return std::unexpected(WriteError{WriteErrc::io, "read root " + writer.root().string() + ": " + std::strerror(err)});
  }
  TreeLister l;
  l.root_dev_ = st.st_dev;
  l.options_ = std::move(options);
  l.stack_.push_back(Level{d, ""});
  return l;
}

TreeLister::TreeLister(TreeLister&& o) noexcept
    : stack_(std::exchange(o.stack_, {})), root_dev_(o.root_dev_), options_(std::move(o.options_)),
      other_filesystems_(std::move(o.other_filesystems_)), listed_(o.listed_) {}

TreeLister& TreeLister::operator=(TreeLister&& o) noexcept {
  if (this != &o) {
    close_all();
    stack_ = std::exchange(o.stack_, {});
    root_dev_ = o.root_dev_;
    options_ = std::move(o.options_);
    other_filesystems_ = std::move(o.other_filesystems_);
    listed_ = o.listed_;
  }
  return *this;
}

TreeLister::~TreeLister() { close_all(); }

void TreeLister::close_all() {
  for (auto& level : stack_) ::closedir(level.dir);
  stack_.clear();
}

std::vector<std::string> TreeLister::take_other_filesystems() { return std::exchange(other_filesystems_, {}); }

std::vector<TreeEntry> TreeLister::next(std::size_t max_entries, Clock::time_point deadline) {
  std::vector<TreeEntry> out;
  while (!stack_.empty() && out.size() < max_entries && (out.empty() || Clock::now() < deadline)) {
    Level& level = stack_.back();
    dirent* de = ::readdir(level.dir);
    if (!de) {
      ::closedir(level.dir);
      stack_.pop_back();
      continue;
    }
    const std::string_view name = de->d_name;
    if (name == "." || name == ".." || name.starts_with(kTempPrefix)) continue;
    const int dfd = ::dirfd(level.dir);
    struct stat st {};
    if (::fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    TreeEntry e;
    e.path = level.rel.empty() ? std::string(name) : level.rel + "/" + std::string(name);
    e.mode = static_cast<std::uint32_t>(st.st_mode & 07777);
    e.mtime_ns = mtime_of(st);
    std::optional<Level> enter;
    if (S_ISDIR(st.st_mode)) {
      if (options_.prune && options_.prune(e.path)) continue;
      e.kind = TreeEntryKind::dir;
      if (st.st_dev != root_dev_) {
        // A mount point (/proc under "/", a dataset volume): listed as the directory it is, never
        // walked, so a listing stays on the mapping's own filesystem.
        other_filesystems_.push_back(e.path);
      } else {
        const int child = ::openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (DIR* cd = child >= 0 ? ::fdopendir(child) : nullptr) enter = Level{cd, e.path};
        else if (child >= 0) ::close(child);
      }
    } else if (S_ISLNK(st.st_mode)) {
      e.kind = TreeEntryKind::symlink;
      std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
      const ssize_t n = ::readlinkat(dfd, de->d_name, target.data(), target.size());
      if (n < 0 || static_cast<std::size_t>(n) >= target.size()) continue;
      target.resize(static_cast<std::size_t>(n));
      e.size = target.size();
      e.link_target = std::move(target);
    } else if (S_ISREG(st.st_mode)) {
      e.kind = TreeEntryKind::file;
      e.size = static_cast<std::uint64_t>(st.st_size);
      if (options_.hash_if && options_.hash_if(e.path)) e.hash = hash_file_at(dfd, de->d_name);
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
