// Ignore-file parsing and git's exclude precedence: per list the last matching pattern wins;
// deeper directories' lists before shallower ones; config excludes last; a matched ancestor
// directory decides for everything below it.
#include "helper/sync/ignore_rules.hpp"

#include <fcntl.h>

#include <map>
#include <mutex>

#include "common/full_io.hpp"
#include "common/open_file.hpp"
#include "common/temp_name.hpp"
#include "common/unique_fd.hpp"
#include "helper/sync/wildmatch.hpp"

namespace ferry::sync {
namespace {

// git's trim_trailing_spaces: unescaped trailing spaces go (tabs stay).
void trim_trailing_spaces(std::string& s) {
  constexpr std::size_t kNone = std::string::npos;
  std::size_t last_space = kNone;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ' ') {
      if (last_space == kNone) last_space = i;
    } else if (s[i] == '\\') {
      ++i;
      if (i >= s.size()) return;
      last_space = kNone;
    } else {
      last_space = kNone;
    }
  }
  if (last_space != kNone) s.resize(last_space);
}

std::size_t simple_length(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '*' || c == '?' || c == '[' || c == '\\') return i;
  }
  return s.size();
}

struct PatternList {
  std::string base;  // "" for the root, else "a/b" (no trailing slash)
  std::vector<IgnorePattern> patterns;
};

bool matches(const IgnorePattern& p, std::string_view rel_to_base, bool is_dir) {
  if (p.dir_only && !is_dir) return false;
  std::string_view glob = p.glob;
  if (p.basename_only) {
    const std::size_t slash = rel_to_base.rfind('/');
    const std::string_view name = slash == std::string_view::npos ? rel_to_base : rel_to_base.substr(slash + 1);
    if (p.literal_prefix == glob.size()) return glob == name;
    return wildmatch(glob, name, false);
  }
  std::size_t prefix = p.literal_prefix;
  if (!glob.empty() && glob.front() == '/') {
    glob.remove_prefix(1);
    --prefix;
  }
  std::string_view name = rel_to_base;
  if (prefix > 0) {
    if (prefix > name.size() || glob.substr(0, prefix) != name.substr(0, prefix)) return false;
    glob.remove_prefix(prefix);
    name.remove_prefix(prefix);
    if (glob.empty() && name.empty()) return true;
  }
  return wildmatch(glob, name, true);
}

std::optional<std::string> read_regular_file_nofollow(const std::filesystem::path& path) {
  const ferry::posix::UniqueFd fd(ferry::posix::open_file_nofollow(path, O_RDONLY));
  if (!fd) return std::nullopt;
  std::string content;
  ferry::posix::read_to_end(fd.get(), content);  // an unreadable rest counts as not there
  return content;
}

// The project's own sync state (index, manifest) lives in /.ferry/ and is never synced.
bool is_state_dir(std::string_view rel) { return rel == ".ferry" || rel.starts_with(".ferry/"); }

// A pull's temp file beside its target (sync_pull.cpp): left behind only by a killed pull, and
// never the user's, so never pushed.
bool is_pull_temp(std::string_view rel) {
  const std::size_t slash = rel.rfind('/');
  return (slash == std::string_view::npos ? rel : rel.substr(slash + 1)).starts_with(ferry::posix::kTempPrefix);
}

bool has_git_component(std::string_view rel) {
  std::size_t start = 0;
  while (start <= rel.size()) {
    const std::size_t end = std::min(rel.find('/', start), rel.size());
    if (rel.substr(start, end - start) == ".git") return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

std::vector<IgnorePattern> parse_ignore_patterns(std::string_view content, std::string_view source) {
  std::vector<IgnorePattern> out;
  int line_no = 0;
  std::size_t start = 0;
  while (start < content.size()) {
    std::size_t end = content.find('\n', start);
    const bool last = end == std::string_view::npos;
    if (last) end = content.size();
    ++line_no;
    std::string line(content.substr(start, end - start));
    start = end + 1;
    // git only takes lines that end in '\n' into account... except the last one, which it
    // terminates itself; a CR before the LF is dropped.
    if (line.empty() || line[0] == '#') continue;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    trim_trailing_spaces(line);
    IgnorePattern p;
    p.text = line;
    p.source = std::string(source);
    p.line = line_no;
    std::string_view g = line;
    if (!g.empty() && g.front() == '!') {
      p.negated = true;
      g.remove_prefix(1);
    }
    if (!g.empty() && g.back() == '/') {
      p.dir_only = true;
      g.remove_suffix(1);
    }
    p.basename_only = g.find('/') == std::string_view::npos;
    p.glob = std::string(g);
    p.literal_prefix = std::min(simple_length(g), g.size());
    out.push_back(std::move(p));
  }
  return out;
}

struct IgnoreMatcher::State {
  std::filesystem::path root;
  bool read_files = false;
  std::vector<std::string> skipped;  // other mappings' folders inside this one

  bool is_skipped(std::string_view rel) const {
    for (const auto& d : skipped)
      if (rel.starts_with(d) && (rel.size() == d.size() || rel[d.size()] == '/')) return true;
    return false;
  }
  PatternList config;
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const PatternList>, std::less<>> dirs;

  std::shared_ptr<const PatternList> dir_list(std::string_view dir) {
    {
      std::lock_guard lock(mutex);
      if (auto it = dirs.find(dir); it != dirs.end()) return it->second;
    }
    auto list = std::make_shared<PatternList>();
    list->base = std::string(dir);
    if (read_files) {
      const std::filesystem::path d = dir.empty() ? root : root / std::filesystem::path(std::string(dir));
      const std::string prefix = dir.empty() ? "" : std::string(dir) + "/";
      for (const char* name : {kGitignoreName, kFerryignoreName}) {
        if (auto content = read_regular_file_nofollow(d / name)) {
          auto ps = parse_ignore_patterns(*content, prefix + name);
          list->patterns.insert(list->patterns.end(), ps.begin(), ps.end());
        }
      }
    }
    std::lock_guard lock(mutex);
    return dirs.emplace(std::string(dir), std::move(list)).first->second;
  }
};

IgnoreMatcher IgnoreMatcher::for_tree(std::filesystem::path root, std::vector<std::string> config_excludes,
                                      std::vector<std::string> skipped_dirs) {
  auto state = std::make_shared<State>();
  state->root = std::move(root);
  state->read_files = true;
  state->skipped = std::move(skipped_dirs);
  std::string joined;
  for (const auto& e : config_excludes) joined += e + "\n";
  state->config.patterns = parse_ignore_patterns(joined, kConfigSource);
  return IgnoreMatcher(std::move(state));
}

IgnoreMatcher IgnoreMatcher::from_patterns(const std::vector<std::string>& patterns, std::string_view source) {
  auto state = std::make_shared<State>();
  std::string joined;
  for (const auto& e : patterns) joined += e + "\n";
  state->config.patterns = parse_ignore_patterns(joined, source);
  return IgnoreMatcher(std::move(state));
}

std::optional<IgnoreMatch> IgnoreMatcher::decide(std::string_view rel, bool is_dir, bool check_ancestors) const {
  // Lists from the root down to rel's parent, loaded as the walk goes.
  std::vector<std::shared_ptr<const PatternList>> lists;
  auto match_in_lists = [&](std::string_view path, bool dir) -> std::optional<IgnoreMatch> {
    auto try_list = [&](const PatternList& l) -> std::optional<IgnoreMatch> {
      const std::string_view sub = l.base.empty() ? path : path.substr(l.base.size() + 1);
      for (auto it = l.patterns.rbegin(); it != l.patterns.rend(); ++it) {
        if (matches(*it, sub, dir)) return IgnoreMatch{it->source, it->line, it->text, it->negated};
      }
      return std::nullopt;
    };
    for (auto it = lists.rbegin(); it != lists.rend(); ++it) {
      if (auto m = try_list(**it)) return m;
    }
    return try_list(state_->config);
  };
  auto list_for = [&](std::string_view dir) {
    if (state_->read_files) lists.push_back(state_->dir_list(dir));
  };
  list_for("");
  std::size_t slash = rel.find('/');
  while (slash != std::string_view::npos) {
    const std::string_view ancestor = rel.substr(0, slash);
    if (check_ancestors) {
      if (auto m = match_in_lists(ancestor, true); m && !m->negated) return m;
    }
    list_for(ancestor);
    slash = rel.find('/', slash + 1);
  }
  return match_in_lists(rel, is_dir);
}

bool IgnoreMatcher::is_ignored(std::string_view rel, bool is_dir) const {
  if (has_git_component(rel) || (state_->read_files && (is_state_dir(rel) || is_pull_temp(rel) || state_->is_skipped(rel))))
    return true;
  auto m = decide(rel, is_dir, true);
  return m && !m->negated;
}

std::optional<IgnoreMatch> IgnoreMatcher::explain(std::string_view rel, bool is_dir) const {
  return decide(rel, is_dir, true);
}

bool IgnoreMatcher::is_ignored_entry(std::string_view rel, bool is_dir) const {
  const std::size_t slash = rel.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? rel : rel.substr(slash + 1);
  if (name == ".git" || (state_->read_files && (rel == ".ferry" || name.starts_with(ferry::posix::kTempPrefix)))) return true;
  if (!state_->skipped.empty() && state_->is_skipped(rel)) return true;
  auto m = decide(rel, is_dir, false);
  return m && !m->negated;
}

}  // namespace ferry::sync
