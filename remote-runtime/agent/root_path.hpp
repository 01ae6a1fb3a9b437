// Paths from the wire, resolved inside the agent's root. Every fs method and every sync
// write goes through here: no absolute paths, no "..", and no escaping the root through a
// symlinked directory. The final component is not followed unless asked, so a symlink inside
// the root that points outside can be stat'ed or replaced, never read or written through.
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <string_view>

namespace ferry::agent {

enum class FollowFinal { no, yes };

struct ResolvedPath {
  std::filesystem::path absolute;  // on disk, parents resolved, inside the root
  std::string relative;            // normalised wire form ("" for the root itself)
};

class RootPath {
 public:
  // Creates the root if missing; fails when it cannot be created or is not a directory.
  static std::expected<RootPath, std::string> open(const std::filesystem::path& root);

  const std::filesystem::path& root() const { return root_; }

  // Lexical checks first (cheap, no I/O), then a walk that resolves symlinked parents.
  std::expected<ResolvedPath, std::string> resolve(std::string_view wire_path,
                                                   FollowFinal follow = FollowFinal::no) const;

 private:
  explicit RootPath(std::filesystem::path root) : root_(std::move(root)) {}
  bool inside(const std::filesystem::path& p) const;
  std::filesystem::path root_;  // canonical
};

// The lexical half of resolve(), usable without a root: the normalised relative path or why not.
std::expected<std::string, std::string> normalize_wire_path(std::string_view wire_path);

}  // namespace ferry::agent
