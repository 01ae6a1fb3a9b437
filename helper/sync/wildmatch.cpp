// wildmatch: a backtracking matcher whose results agree with git's (see the test against
// `git check-ignore`). The "abort" results prune backtracking the same way git's do, which
// keeps pathological patterns linear-ish instead of exponential.
#include "helper/sync/wildmatch.hpp"

#include <cctype>

namespace ferry::sync {
namespace {

enum class Result { match, no_match, abort_all, abort_to_starstar };

bool is_special(char c) { return c == '*' || c == '?' || c == '[' || c == '\\'; }

bool in_named_class(std::string_view name, unsigned char c) {
  if (name == "alnum") return std::isalnum(c);
  if (name == "alpha") return std::isalpha(c);
  if (name == "blank") return c == ' ' || c == '\t';
  if (name == "cntrl") return std::iscntrl(c);
  if (name == "digit") return std::isdigit(c);
  if (name == "graph") return std::isgraph(c);
  if (name == "lower") return std::islower(c);
  if (name == "print") return std::isprint(c);
  if (name == "punct") return std::ispunct(c);
  if (name == "space") return std::isspace(c);
  if (name == "upper") return std::isupper(c);
  if (name == "xdigit") return std::isxdigit(c);
  return false;
}

class Matcher {
 public:
  Matcher(std::string_view pattern, bool pathname) : pat_(pattern), pathname_(pathname) {}

  // Indices into the pattern and the text; positions past the end read as '\0'.
  Result run(std::size_t p, std::size_t t) const {
    for (; p < pat_.size(); ++p, ++t) {
      char pc = pat_[p];
      const char tc = at_text(t);
      if (tc == '\0' && pc != '*') return Result::abort_all;
      switch (pc) {
        case '\\':
          ++p;
          pc = at_pat(p);
          if (tc != pc) return Result::no_match;
          continue;
        case '?':
          if (pathname_ && tc == '/') return Result::no_match;
          continue;
        case '*': {
          bool match_slash = false;
          if (at_pat(p + 1) == '*') {
            const std::size_t first = p;
            while (at_pat(p + 1) == '*') ++p;
            ++p;  // p is now just past the run of stars
            const bool left_ok = first == 0 || pat_[first - 1] == '/';
            const char next = at_pat(p);
            const bool right_ok = next == '\0' || next == '/' || (next == '\\' && at_pat(p + 1) == '/');
            if (left_ok && right_ok) {
              // "**/" may match no directory at all: try skipping it outright.
              if (next == '/' && run(p + 1, t) == Result::match) return Result::match;
              match_slash = true;
            }
          } else {
            ++p;
            match_slash = !pathname_;
          }
          if (p >= pat_.size()) {
            if (!match_slash && text_.find('/', t) != std::string_view::npos) return Result::no_match;
            return Result::match;
          }
          if (!match_slash && pat_[p] == '/') {
            // One star then a slash: consume the rest of this path component.
            const std::size_t slash = text_.find('/', t);
            if (slash == std::string_view::npos) return Result::no_match;
            return run(p + 1, slash + 1);  // both slashes consumed
          }
          for (std::size_t tt = t;; ++tt) {
            char c = at_text(tt);
            if (c == '\0') break;
            if (!is_special(pat_[p])) {
              // Fast-forward to the next occurrence of the literal that follows the star.
              while ((c = at_text(tt)) != '\0' && (match_slash || c != '/') && c != pat_[p]) ++tt;
              if (c != pat_[p]) return Result::no_match;
            }
            const Result r = run(p, tt);
            if (r != Result::no_match) {
              if (!match_slash || r != Result::abort_to_starstar) return r;
            } else if (!match_slash && at_text(tt) == '/') {
              return Result::abort_to_starstar;
            }
          }
          return Result::abort_all;
        }
        case '[': {
          ++p;
          pc = at_pat(p);
          if (pc == '^') pc = '!';
          const bool negated = pc == '!';
          if (negated) pc = at_pat(++p);
          char prev = 0;
          bool matched = false;
          do {
            if (pc == '\0') return Result::abort_all;
            if (pc == '\\') {
              pc = at_pat(++p);
              if (pc == '\0') return Result::abort_all;
              if (tc == pc) matched = true;
            } else if (pc == '-' && prev && at_pat(p + 1) && at_pat(p + 1) != ']') {
              pc = at_pat(++p);
              if (pc == '\\') {
                pc = at_pat(++p);
                if (pc == '\0') return Result::abort_all;
              }
              if (static_cast<unsigned char>(tc) <= static_cast<unsigned char>(pc) &&
                  static_cast<unsigned char>(tc) >= static_cast<unsigned char>(prev)) {
                matched = true;
              }
              pc = 0;  // a range end cannot start another range
            } else if (pc == '[' && at_pat(p + 1) == ':') {
              const std::size_t name_start = p + 2;
              std::size_t q = name_start;
              while (at_pat(q) && at_pat(q) != ']') ++q;
              if (!at_pat(q)) return Result::abort_all;
              if (q - name_start == 0 || at_pat(q - 1) != ':') {
                // Not a class name after all: treat '[' as a literal member.
                if (tc == '[') matched = true;
              } else {
                const std::string_view name = pat_.substr(name_start, q - 1 - name_start);
                if (name.empty() || !(name == "alnum" || name == "alpha" || name == "blank" ||
                                      name == "cntrl" || name == "digit" || name == "graph" ||
                                      name == "lower" || name == "print" || name == "punct" ||
                                      name == "space" || name == "upper" || name == "xdigit")) {
                  return Result::abort_all;  // git: malformed [[:name:]]
                }
                if (in_named_class(name, static_cast<unsigned char>(tc))) matched = true;
                p = q;
                pc = 0;
              }
            } else if (tc == pc) {
              matched = true;
            }
            prev = pc;
            pc = at_pat(++p);
          } while (pc != ']');
          if (matched == negated || (pathname_ && tc == '/')) return Result::no_match;
          continue;
        }
        default:
          if (tc != pc) return Result::no_match;
          continue;
      }
    }
    return t < text_.size() ? Result::no_match : Result::match;
  }

  void set_text(std::string_view text) { text_ = text; }

 private:
  char at_pat(std::size_t i) const { return i < pat_.size() ? pat_[i] : '\0'; }
  char at_text(std::size_t i) const { return i < text_.size() ? text_[i] : '\0'; }

  std::string_view pat_;
  std::string_view text_;
  bool pathname_;
};

}  // namespace

bool wildmatch(std::string_view pattern, std::string_view text, bool pathname) {
  Matcher m(pattern, pathname);
  m.set_text(text);
  return m.run(0, 0) == Result::match;
}

}  // namespace ferry::sync
