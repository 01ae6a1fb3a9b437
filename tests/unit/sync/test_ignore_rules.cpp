// Ignore rules agree with git: random pattern sets (a grammar over every .gitignore feature)
// and hand-written tricky ones are laid out in temp repos, `git check-ignore --no-index -v -n
// -z --stdin` is asked once per repo, and every decision (and the deciding source:line) must
// match ours. Under Wine (the Windows build) git is not there to ask: the cases that need it are
// POSIX-only, the rest (CRLF ignore files among them) run on both.
#define BOOST_TEST_MODULE ignore_rules
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "helper/sync/ignore_rules.hpp"
#include "helper/sync/wildmatch.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::sync;
namespace fs = std::filesystem;
using ferry::test::TempDir;
using ferry::test::read_file;
using ferry::test::write_file;

#ifndef _WIN32
namespace {

struct Case {
  std::map<std::string, std::string> ignore_files;  // "a/.gitignore" -> content
  std::string info_exclude;                          // plays the config's `exclude`
  std::set<std::string> files, dirs;                 // the tree (dirs include all parents)
};

struct GitAnswer {
  std::string source;
  int line = 0;
  std::string pattern;
};

void add_file(Case& c, const std::string& path) {
  c.files.insert(path);
  for (std::size_t s = path.find('/'); s != std::string::npos; s = path.find('/', s + 1)) {
    c.dirs.insert(path.substr(0, s));
  }
}

// How many decisions went each way, so the test proves it is not trivially "never ignored".
int g_ignored = 0, g_reincluded = 0;

// Lays `c` out in a fresh repo, asks git about every path once, and compares.
int compare_with_git(const Case& c, const std::string& label) {
  TempDir tmp;
  const fs::path repo = tmp.path() / "repo";
  fs::create_directories(repo);
  const std::string env = "HOME='" + tmp.path().string() + "' XDG_CONFIG_HOME='" + tmp.path().string() +
                          "' GIT_CONFIG_NOSYSTEM=1 ";
  BOOST_REQUIRE(std::system((env + "git init -q '" + repo.string() + "'").c_str()) == 0);
  for (const auto& d : c.dirs) fs::create_directories(repo / d);
  for (const auto& f : c.files) write_file(repo / f, "x");
  for (const auto& [p, content] : c.ignore_files) write_file(repo / p, content);
  write_file(repo / ".git/info/exclude", c.info_exclude);

  std::vector<std::pair<std::string, bool>> queries;
  for (const auto& d : c.dirs) queries.emplace_back(d, true);
  for (const auto& f : c.files) queries.emplace_back(f, false);
  for (const auto& [p, content] : c.ignore_files) {
    if (!c.files.count(p)) queries.emplace_back(p, false);
  }
  std::string input;
  for (const auto& q : queries) input += q.first + '\0';
  write_file(tmp.path() / "in", input);
  const std::string cmd = "cd '" + repo.string() + "' && " + env +
                          "git check-ignore --no-index -v -n -z --stdin < '" + (tmp.path() / "in").string() +
                          "' > '" + (tmp.path() / "out").string() + "'";
  const int rc = std::system(cmd.c_str());
  BOOST_REQUIRE_MESSAGE(rc == 0 || WEXITSTATUS(rc) == 1, "git check-ignore failed: " << rc);
  const std::string out = read_file(tmp.path() / "out");
  std::vector<std::string> fields;
  for (std::size_t at = 0; at < out.size();) {
    const std::size_t end = out.find('\0', at);
    BOOST_REQUIRE(end != std::string::npos);
    fields.push_back(out.substr(at, end - at));
    at = end + 1;
  }
  BOOST_REQUIRE_EQUAL(fields.size(), queries.size() * 4);
  std::map<std::string, GitAnswer> git;
  for (std::size_t i = 0; i < fields.size(); i += 4) {
    GitAnswer a{fields[i], fields[i + 1].empty() ? 0 : std::stoi(fields[i + 1]), fields[i + 2]};
    if (a.source == ".git/info/exclude") a.source = kConfigSource;
    git[fields[i + 3]] = a;
  }

  std::vector<std::string> excludes;
  {
    std::istringstream lines(c.info_exclude);
    for (std::string l; std::getline(lines, l);) excludes.push_back(l);
  }
  const IgnoreMatcher m = IgnoreMatcher::for_tree(repo, excludes);
  int compared = 0;
  for (const auto& [path, is_dir] : queries) {
    BOOST_REQUIRE(git.count(path));
    const GitAnswer& g = git[path];
    const auto ours = m.explain(path, is_dir);
    const bool git_ignored = !g.source.empty() && (g.pattern.empty() || g.pattern[0] != '!');
    BOOST_TEST_CONTEXT(label << " path='" << path << "' dir=" << is_dir << " git=" << g.source << ":" << g.line
                             << ":" << g.pattern << " ours=" << (ours ? ours->source + ":" + std::to_string(ours->line) + ":" + ours->pattern : "none")) {
      BOOST_TEST(m.is_ignored(path, is_dir) == git_ignored);
      BOOST_TEST(ours.has_value() == !g.source.empty());
      if (ours && !g.source.empty()) {
        BOOST_TEST(ours->source == g.source);
        BOOST_TEST(ours->line == g.line);
        BOOST_TEST(ours->pattern == g.pattern);
      }
    }
    ++compared;
    if (git_ignored) ++g_ignored;
    else if (!g.source.empty()) ++g_reincluded;
  }
  return compared;
}

// ---- the random grammar ------------------------------------------------------------------

const std::vector<std::string> kNames = {"a", "b", "ab", "abc", "foo", "Foo", "build", "x.log", "y.txt",
                                         "a b", "#c", "!n", "data", "d.py", "sp ", "q?", "l[1]", "z-9"};

std::string random_segment(std::mt19937& rng) {
  static const std::vector<std::string> atoms = {
      "a", "b", "ab", "foo", "build", "data", "*", "?", "*.log", "*.txt", "a*", "*b", "f?o", "[a-c]",
      "[!a]", "[^b]", "[ab]*", "\\#c", "\\!n", "a\\ b", "x.lo[g]", "[[:alpha:]]*", "y.*", "d.p?", "[]a]",
      "*[0-9]", "q\\?", "l\\[1]", "sp\\ ", "z-9", "F*", "[!F]oo", "b**", "**a"};
  return atoms[rng() % atoms.size()];
}

std::string random_pattern(std::mt19937& rng) {
  std::string p;
  const int segs = 1 + static_cast<int>(rng() % 3);
  const bool lead_slash = rng() % 4 == 0;
  if (lead_slash) p += "/";
  for (int i = 0; i < segs; ++i) {
    if (i) p += "/";
    if (rng() % 6 == 0) p += "**";
    else p += random_segment(rng);
  }
  if (rng() % 4 == 0) p += "/";
  if (rng() % 10 == 0) p += "  ";   // trailing spaces are trimmed
  if (rng() % 3 == 0) p = "!" + p;
  return p;
}

std::string random_ignore_file(std::mt19937& rng) {
  std::string s;
  const int n = 1 + static_cast<int>(rng() % 6);
  for (int i = 0; i < n; ++i) {
    if (rng() % 8 == 0) s += "# comment\n";
    if (rng() % 10 == 0) s += "\n";
    s += random_pattern(rng);
    s += (rng() % 12 == 0) ? "\r\n" : "\n";
  }
  return s;
}

Case random_case(std::mt19937& rng) {
  Case c;
  const int files = 25 + static_cast<int>(rng() % 15);
  for (int i = 0; i < files; ++i) {
    std::string path;
    const int depth = 1 + static_cast<int>(rng() % 4);
    for (int d = 0; d < depth; ++d) {
      if (d) path += "/";
      path += kNames[rng() % kNames.size()];
    }
    // A path cannot be both a file and a directory.
    bool clash = c.dirs.count(path) > 0;
    for (std::size_t s = path.find('/'); s != std::string::npos; s = path.find('/', s + 1)) {
      if (c.files.count(path.substr(0, s))) clash = true;
    }
    if (!clash) add_file(c, path);
  }
  c.ignore_files[".gitignore"] = random_ignore_file(rng);
  std::vector<std::string> dirs(c.dirs.begin(), c.dirs.end());
  for (int i = 0; i < 3 && !dirs.empty(); ++i) {
    c.ignore_files[dirs[rng() % dirs.size()] + "/.gitignore"] = random_ignore_file(rng);
  }
  if (rng() % 2) c.info_exclude = random_ignore_file(rng);
  return c;
}

}  // namespace

BOOST_AUTO_TEST_CASE(random_pattern_sets_agree_with_git_check_ignore) {
  std::mt19937 rng(20261130);
  int compared = 0;
  for (int i = 0; i < 24; ++i) compared += compare_with_git(random_case(rng), "random#" + std::to_string(i));
  BOOST_TEST_MESSAGE("compared " << compared << " random decisions with git: " << g_ignored
                                   << " ignored, " << g_reincluded << " re-included by a negation");
  BOOST_TEST(compared >= 500);
  BOOST_TEST(g_ignored >= 100);
  BOOST_TEST(g_reincluded >= 20);
}

BOOST_AUTO_TEST_CASE(tricky_cases_agree_with_git_check_ignore) {
  Case c;
  for (const char* f : {"build/out.o", "build/keep.txt", "src/build/x.o", "logs/a.log", "logs/keep/b.log",
                        "doc/a/b/c.md", "doc/c.md", "top.txt", "src/top.txt", "foo", "sub/foo/bar", "a/x/y/b",
                        "a/b", "abc/d", "x/a", "#hash", "!bang", "trail ", "tab\t", "[x]", "esc*", "m/n/o/p.py",
                        "m/keep.py", "deep/nested/.gitignore.d", "deep/nested/z.tmp", "deep/z.tmp", "q/r/s", "ab/b/c"}) {
    add_file(c, f);
  }
  c.ignore_files[".gitignore"] =
      "# excluded dir: nothing below can come back\n"
      "build/\n!build/keep.txt\n"
      "/top.txt\n"
      "logs/**\n!logs/keep/\n"
      "doc/**/c.md\n"
      "**/foo/bar\n"
      "a/**/b\n"
      "\\#hash\n\\!bang\n"
      "trail\\ \n"
      "tab\t\n"
      "\\[x]\n"
      "esc\\*\n"
      "m/*/\n"
      "*.tmp\n"
      "q/r/\n"
      "ab**\n"
      "x/a**\n";
  c.ignore_files["deep/.gitignore"] = "!z.tmp\nnested/\n";
  c.ignore_files["deep/nested/.gitignore"] = "!z.tmp\n";
  c.ignore_files["m/.gitignore"] = "!n/\n";
  c.info_exclude = "*.o\n!src/build/x.o\n";
  BOOST_TEST(compare_with_git(c, "tricky") > 40);
}

#endif  // _WIN32

BOOST_AUTO_TEST_CASE(ferryignore_applies_after_gitignore_in_its_directory) {
  TempDir tmp;
  write_file(tmp.path() / ".gitignore", "*.log\n!keep.log\n");
  write_file(tmp.path() / ".ferryignore", "keep.log\n!trace.log\nmodels/\n");
  write_file(tmp.path() / "sub/.gitignore", "!*.log\n");
  const IgnoreMatcher m = IgnoreMatcher::for_tree(tmp.path(), {"*.ckpt", "!best.ckpt"});
  BOOST_TEST(m.is_ignored("keep.log", false));
  BOOST_TEST(!m.is_ignored("trace.log", false));
  BOOST_TEST(m.is_ignored("other.log", false));
  BOOST_TEST(!m.is_ignored("sub/other.log", false));  // the deeper .gitignore wins
  BOOST_TEST(m.is_ignored("models", true));
  BOOST_TEST(m.is_ignored("models/m.pt", false));
  BOOST_TEST(m.is_ignored("x.ckpt", false));
  BOOST_TEST(!m.is_ignored("best.ckpt", false));
  BOOST_TEST(m.is_ignored(".git", true));
  BOOST_TEST(m.is_ignored(".git/config", false));
  BOOST_TEST(m.explain("keep.log", false)->source == ".ferryignore");
  BOOST_TEST(m.is_ignored(".ferry", true));  // the project's sync state
  BOOST_TEST(m.is_ignored(".ferry/index.bin", false));
  BOOST_TEST(m.is_ignored_entry(".ferry", true));
  BOOST_TEST(!m.is_ignored("sub/.ferry", true));
  // A killed pull's temp file, anywhere in the tree; a user's file named alike but not so is kept.
  BOOST_TEST(m.is_ignored(".ferry-tmp.model.pt.0badf00d", false));
  BOOST_TEST(m.is_ignored("out/ckpt/.ferry-tmp.step-100.pt.1234abcd", false));
  BOOST_TEST(m.is_ignored_entry("out/.ferry-tmp.log.txt.00000001", false));
  BOOST_TEST(!m.is_ignored("out/ferry-tmp.txt", false));
}

BOOST_AUTO_TEST_CASE(protect_patterns_use_the_same_matcher) {
  const IgnoreMatcher protect = IgnoreMatcher::from_patterns({"/.data/", "datasets/", "outputs/**", "*.ckpt"});
  BOOST_TEST(protect.is_ignored(".data/a/b.bin", false));
  BOOST_TEST(protect.is_ignored("x/datasets/train.csv", false));
  BOOST_TEST(protect.is_ignored("outputs/run1/loss.csv", false));
  BOOST_TEST(!protect.is_ignored("outputs", true));
  BOOST_TEST(protect.is_ignored("m/last.ckpt", false));
  BOOST_TEST(!protect.is_ignored("src/train.py", false));
  BOOST_TEST(!protect.is_ignored("x/.data/y", false));
}

BOOST_AUTO_TEST_CASE(wildmatch_edge_cases) {
  BOOST_TEST(wildmatch("a/**/b", "a/b", true));
  BOOST_TEST(wildmatch("a/**/b", "a/x/y/b", true));
  BOOST_TEST(!wildmatch("a/*/b", "a/x/y/b", true));
  BOOST_TEST(wildmatch("**/b", "x/y/b", true));
  BOOST_TEST(wildmatch("a/**", "a/x/y", true));
  BOOST_TEST(!wildmatch("a**", "ab/c", true));
  BOOST_TEST(wildmatch("[]a]", "]", true));
  BOOST_TEST(wildmatch("[!a]", "b", true));
  BOOST_TEST(!wildmatch("[!a]", "/", true));
  BOOST_TEST(wildmatch("[[:digit:]]x", "7x", true));
  BOOST_TEST(!wildmatch("[[:bogus:]]", "b", true));
  BOOST_TEST(!wildmatch("[abc", "a", true));
  BOOST_TEST(wildmatch("\\*", "*", true));
  BOOST_TEST(!wildmatch("\\*", "a", true));
  BOOST_TEST(!wildmatch("ab\\", "ab", true));
}

// A .gitignore or .ferryignore saved on Windows (CRLF line ends, blank lines too) decides as the
// same file with LF ends: the CR is no part of a pattern.
BOOST_AUTO_TEST_CASE(crlf_ignore_files_decide_as_lf_ones) {
  const std::string git = "*.log\n\n# comment\n!keep.log\nbuild/\ntrailing  \n/rooted.txt\nsub/*.tmp\n";
  const std::string ferry = "keep.log\n\n!trace.log\nmodels/\n";
  const auto crlf = [](const std::string& s) {
    std::string out;
    for (const char c : s) out += c == '\n' ? std::string("\r\n") : std::string(1, c);
    return out;
  };
  TempDir lf, cr;
  write_file(lf.path() / ".gitignore", git);
  write_file(lf.path() / ".ferryignore", ferry);
  write_file(cr.path() / ".gitignore", crlf(git));
  write_file(cr.path() / ".ferryignore", crlf(ferry));
  const IgnoreMatcher a = IgnoreMatcher::for_tree(lf.path(), {});
  const IgnoreMatcher b = IgnoreMatcher::for_tree(cr.path(), {});
  const std::vector<std::pair<std::string, bool>> probes{
      {"x.log", false},     {"keep.log", false}, {"trace.log", false}, {"build", true},       {"build", false},
      {"trailing", false},  {"trailing  ", false}, {"rooted.txt", false}, {"a/rooted.txt", false}, {"sub/x.tmp", false},
      {"models", true},     {"models/m.pt", false}, {"x.log\r", false}, {"other.py", false},    {"comment", false}};
  for (const auto& [path, dir] : probes) BOOST_TEST(a.is_ignored(path, dir) == b.is_ignored(path, dir), path);
  BOOST_TEST(b.is_ignored("x.log", false));
  BOOST_TEST(b.is_ignored("keep.log", false));   // .ferryignore's line, CR and all, wins
  BOOST_TEST(!b.is_ignored("trace.log", false)); // its negation too
  BOOST_TEST(b.is_ignored("build", true));
  BOOST_TEST(!b.is_ignored("build", false));     // "build/\r" is still a directory-only pattern
  BOOST_TEST(b.is_ignored("trailing", false));
  BOOST_TEST(b.is_ignored("rooted.txt", false));
  BOOST_TEST(!b.is_ignored("a/rooted.txt", false));
  BOOST_TEST(b.is_ignored("models", true));
  BOOST_TEST(!b.is_ignored("other.py", false));
}
