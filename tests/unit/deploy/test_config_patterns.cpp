// The quick accepts of ferry.json's patterns: never a yes the regex would not give (random strings
// over the characters the patterns care about, and each pattern's edges), and yes for the shapes
// real projects use, so loading a usual ferry.json compiles no regex.
#define BOOST_TEST_MODULE config_patterns
#include <boost/test/unit_test.hpp>

#include <random>
#include <regex>
#include <string>

#include "helper/deploy/config_patterns.hpp"
#include "helper/deploy/host_spec.hpp"

using namespace ferry::deploy;

namespace {

const char* const kPatterns[] = {kNamePattern,     kLocalPathPattern,  kRemotePathPattern, kEnvNamePattern,
                                 kTunnelNamePattern, kLaunchNamePattern, kModulePattern,     kHostPattern};

}  // namespace

BOOST_AUTO_TEST_CASE(a_quick_yes_is_always_the_regexs_yes) {
  const std::string alphabet = "aZ09_.-/~@:[] \t\n\xc3\xa9";
  std::mt19937 rng(11);
  for (const char* pattern : kPatterns) {
    const std::regex re(pattern, std::regex::ECMAScript);
    int quick = 0;
    for (int i = 0; i < 40000; ++i) {
      std::string s(rng() % 9, ' ');
      for (auto& c : s) c = alphabet[rng() % alphabet.size()];
      if (!quick_accept(s, pattern)) continue;
      ++quick;
      BOOST_TEST(std::regex_match(s, re), pattern << " quick-accepted \"" << s << "\"");
    }
    if (pattern != kLaunchNamePattern && pattern != kModulePattern) BOOST_TEST(quick > 0, pattern);
  }
}

BOOST_AUTO_TEST_CASE(the_edges_are_left_to_the_regex_or_agree_with_it) {
  const std::vector<std::string> edges = {"", ".", "..", "...", "a/..", "../a", "a/../b", "a/..b", "..a/b", "/", "//", "~",
                                          "~/", "~x", "/..", "~/..", "~/a/..", "/a b", "a ", " a", "-a", "_a", "9a",
                                          "a@b", "@b", "a@", "a@@b", "a:22", "[::1]", std::string(101, 'a'),
                                          std::string(65, 'a'), std::string(64, 'a'), std::string(100, 'a')};
  for (const char* pattern : kPatterns) {
    const std::regex re(pattern, std::regex::ECMAScript);
    for (const auto& s : edges)
      if (quick_accept(s, pattern)) BOOST_TEST(std::regex_match(s, re), pattern << " quick-accepted \"" << s << "\"");
  }
}

BOOST_AUTO_TEST_CASE(what_projects_write_is_accepted_without_a_regex) {
  for (const char* host : {"gpu-box", "ubuntu@gpu1", "lambda_h100", "box.example.com", "local"})
    BOOST_TEST(quick_accept(host, kHostPattern), host);
  for (const char* local : {".", "src", "src/train.py", "outputs/run-1", ".venv"})
    BOOST_TEST(quick_accept(local, kLocalPathPattern), local);
  for (const char* remote : {"~/proj", "/data/proj", "~", "/workspace/a.b"})
    BOOST_TEST(quick_accept(remote, kRemotePathPattern), remote);
  BOOST_TEST(quick_accept("CUDA_VISIBLE_DEVICES", kEnvNamePattern));
  BOOST_TEST(quick_accept("tensorboard", kTunnelNamePattern));
  BOOST_TEST(quick_accept("my-project", kNamePattern));
  // Refused ones go to the regex (which refuses them).
  BOOST_TEST(!quick_accept("../x", kLocalPathPattern));
  BOOST_TEST(!quick_accept("/a/../b", kRemotePathPattern));
  BOOST_TEST(!quick_accept("-oProxyCommand=x", kHostPattern));
  BOOST_TEST(!quick_accept("1X", kEnvNamePattern));
}
