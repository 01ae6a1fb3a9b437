// The remote half of the planner's input: what is under the agent root now (kind, mode, size,
// mtime in ns, symlink target and, where asked, the xxh3-128). Walked without following any
// symlink; ferry's own temp files are left out; a caller-given predicate prunes subtrees the
// helper does not need (protected datasets, excluded paths), so their size never costs a stat.
#pragma once

#include <cstdint>
#include <expected>
#include <functional>
#include <optional>
#include <string>
#include <vector>

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
};

// Sorted by path. Unreadable entries are skipped; the walk itself failing is an error.
std::expected<std::vector<TreeEntry>, WriteError> list_tree(const FileWriter& writer, const ListOptions& options = {});

}  // namespace ferry::agent::sync
