// Which paths of a project sync skips: .gitignore semantics exactly as git applies them
// (checked against `git check-ignore`), read from nested .gitignore files, .ferryignore files
// (same syntax, applied after the .gitignore of the same directory) and the config's `exclude`
// list (lowest priority, like .git/info/exclude). `.git` (at any depth) and the project's
// `.ferry/` state directory are always excluded, and so are the folders of a project's other
// mappings nested in this one (they are synced by their own mapping). The same matcher,
// built from patterns only, decides which remote paths are protected.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::sync {

inline constexpr const char* kGitignoreName = ".gitignore";
inline constexpr const char* kFerryignoreName = ".ferryignore";
inline constexpr const char* kConfigSource = "<config>";

struct IgnorePattern {
  std::string text;       // the pattern as written (trailing spaces trimmed), for reports
  std::string glob;       // without '!' and the trailing '/'
  std::string source;     // ".gitignore", "a/b/.ferryignore", "<config>", ...
  int line = 0;           // 1-based line in `source`
  bool negated = false;   // "!pattern": re-includes
  bool dir_only = false;  // "pattern/": matches directories only
  bool basename_only = false;  // no '/' except a trailing one: matches the name at any depth
  std::size_t literal_prefix = 0;  // leading bytes without glob characters
};

// Parses one ignore file. Comments and blank lines are dropped; a line trimmed to nothing is
// kept, as git keeps it, and never matches.
std::vector<IgnorePattern> parse_ignore_patterns(std::string_view content, std::string_view source);

// The pattern that decided a path (as `git check-ignore -v` shows it).
struct IgnoreMatch {
  std::string source;
  int line = 0;
  std::string pattern;  // as written, with its '!' if negated
  bool negated = false;
};

class IgnoreMatcher {
 public:
  // Rules for the tree under `root`; ignore files are read lazily (once per directory, thread
  // safe) as paths below them are decided. Symlinked ignore files are not followed, as git.
  // `skipped_dirs` (relative to the root) are excluded as `.ferry/` is, whatever the patterns say.
  static IgnoreMatcher for_tree(std::filesystem::path root, std::vector<std::string> config_excludes,
                                std::vector<std::string> skipped_dirs = {});

  // Rules from patterns alone (protect lists, tests), relative to the root.
  static IgnoreMatcher from_patterns(const std::vector<std::string>& patterns,
                                     std::string_view source = kConfigSource);

  // `rel`: '/'-separated path relative to the root, no leading "./" or trailing '/'.
  // A path inside an ignored directory is ignored whatever negations follow.
  bool is_ignored(std::string_view rel, bool is_dir) const;

  // The deciding pattern, negated ones included; nullopt when none matches.
  std::optional<IgnoreMatch> explain(std::string_view rel, bool is_dir) const;

  // For walkers that never descend into ignored directories: decides `rel` by its own
  // patterns only, trusting that no ancestor is ignored. Cheaper than is_ignored.
  bool is_ignored_entry(std::string_view rel, bool is_dir) const;

 private:
  struct State;
  explicit IgnoreMatcher(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::optional<IgnoreMatch> decide(std::string_view rel, bool is_dir, bool check_ancestors) const;
  std::shared_ptr<State> state_;
};

}  // namespace ferry::sync
