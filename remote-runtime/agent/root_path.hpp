// Paths from the wire, resolved inside the agent's root. Every fs method and every sync
// write goes through here: no absolute paths, no "..", and no escaping the root through a
// symlinked directory. The final component is not followed unless asked, so a symlink inside
// the root that points outside can be stat'ed or replaced, never read or written through.
#pragma once

#include <expected>
#include <filesystem>
#include <optional>
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
  // Creates the root if missing; fails when it cannot be created or is not a directory, and
  // never creates one where it would resolve to a place no mapping root may be (a missing
  // "~/link-to-etc/p" would otherwise become /etc/p): see resolved_root_refusal.
  static std::expected<RootPath, std::string> open(const std::filesystem::path& root);

  const std::filesystem::path& root() const { return root_; }
  // The root as it was given (absolute, not resolved), for messages that name both.
  const std::filesystem::path& given() const { return given_; }

  // Lexical checks first (cheap, no I/O), then a walk that resolves symlinked parents.
  std::expected<ResolvedPath, std::string> resolve(std::string_view wire_path,
                                                   FollowFinal follow = FollowFinal::no) const;

 private:
  RootPath(std::filesystem::path root, std::filesystem::path given) : root_(std::move(root)), given_(std::move(given)) {}
  bool inside(const std::filesystem::path& p) const;
  std::filesystem::path root_;  // canonical
  std::filesystem::path given_;
};

// Where `given` lands on this host: its realpath when it exists; else the realpath of its deepest
// existing ancestor with the missing rest appended (what creating it would make). Relative paths
// are taken from the working directory.
std::expected<std::filesystem::path, std::string> resolve_root_location(const std::filesystem::path& given);

// Why a sync may not use `given`, which resolves to `resolved`, as its root, or nullopt. The rule
// is ferry.json's for mapping roots (protocol/mapping_root.hpp), applied here to the resolved path,
// which only the box can know (a symlink to /etc, a home elsewhere than /home/USER); plus the home
// directory of the user the agent runs as. A directory strictly below that home is the user's own
// wherever the home lives (/var/lib/jenkins/p). The message names both paths when they differ.
std::optional<std::string> resolved_root_refusal(const std::filesystem::path& given, const std::filesystem::path& resolved);

// The lexical half of resolve(), usable without a root: the normalised relative path or why not.
std::expected<std::string, std::string> normalize_wire_path(std::string_view wire_path);

}  // namespace ferry::agent
