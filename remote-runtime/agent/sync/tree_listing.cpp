// Remote tree listing for the planner; see tree_listing.hpp.
#include "remote-runtime/agent/sync/tree_listing.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

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

std::expected<std::vector<TreeEntry>, WriteError> list_tree(const FileWriter& writer, const ListOptions& options) {
  const int root = ::open(writer.root().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) {
    return std::unexpected(WriteError{WriteErrc::io, "open root " + writer.root().string() + ": " + std::strerror(errno)});
  }
  std::vector<TreeEntry> out;
  std::vector<std::pair<int, std::string>> stack{{root, ""}};
  while (!stack.empty()) {
    auto [fd, rel] = std::move(stack.back());
    stack.pop_back();
    DIR* d = ::fdopendir(fd);
    if (!d) {
      ::close(fd);
      continue;
    }
    while (dirent* de = ::readdir(d)) {
      const std::string_view name = de->d_name;
      if (name == "." || name == ".." || name.starts_with(kTempPrefix)) continue;
      struct stat st {};
      if (::fstatat(::dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      TreeEntry e;
      e.path = rel.empty() ? std::string(name) : rel + "/" + std::string(name);
      e.mode = static_cast<std::uint32_t>(st.st_mode & 07777);
      e.mtime_ns = mtime_of(st);
      if (S_ISDIR(st.st_mode)) {
        if (options.prune && options.prune(e.path)) continue;
        e.kind = TreeEntryKind::dir;
        const int child = ::openat(::dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (child >= 0) stack.emplace_back(child, e.path);
      } else if (S_ISLNK(st.st_mode)) {
        e.kind = TreeEntryKind::symlink;
        std::string target(static_cast<std::size_t>(st.st_size) + 1, '\0');
        const ssize_t n = ::readlinkat(::dirfd(d), de->d_name, target.data(), target.size());
        if (n < 0 || static_cast<std::size_t>(n) >= target.size()) continue;
        target.resize(static_cast<std::size_t>(n));
        e.size = target.size();
        e.link_target = std::move(target);
      } else if (S_ISREG(st.st_mode)) {
        e.kind = TreeEntryKind::file;
        e.size = static_cast<std::uint64_t>(st.st_size);
        if (options.hash_if && options.hash_if(e.path)) e.hash = hash_file_at(::dirfd(d), de->d_name);
      } else {
        continue;  // fifos, sockets, devices: never sync targets
      }
      out.push_back(std::move(e));
    }
    ::closedir(d);
  }
  std::sort(out.begin(), out.end(), [](const TreeEntry& a, const TreeEntry& b) { return a.path < b.path; });
  return out;
}

}  // namespace ferry::agent::sync
