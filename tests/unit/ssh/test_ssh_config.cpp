// ssh config resolution: a corpus of tricky configs with expected values, cross-checked against
// `ssh -G -F FILE alias` where OpenSSH prints the same fields.
#define BOOST_TEST_MODULE ssh_config
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "helper/ssh/ssh_config.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::ssh;
namespace fs = std::filesystem;

namespace {

using ferry::test::TempDir;

fs::path write(const TempDir& t, const std::string& name, const std::string& text) {
  fs::path p = t / name;
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
  return p;
}

LocalContext test_local(const fs::path& home) { return LocalContext{"alice", home}; }

HostConfig resolve_ok(const fs::path& file, const std::string& dest, const LocalContext& local) {
  auto d = parse_destination(dest);
  BOOST_REQUIRE_MESSAGE(d.has_value(), "destination " << dest);
  auto r = resolve_host(*d, file, local, true);
  BOOST_REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().to_string()));
  return *r;
}

// `ssh -G` output as key -> value (first occurrence; identityfile lines joined).
std::map<std::string, std::string> ssh_dash_g(const fs::path& file, const std::string& alias) {
  std::string cmd = "ssh -G -F '" + file.string() + "' '" + alias + "' 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), ::pclose);
  BOOST_REQUIRE(p);
  std::map<std::string, std::string> out;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p.get())) {
    std::string line(buf.data());
    if (!line.empty() && line.back() == '\n') line.pop_back();
    auto sp = line.find(' ');
    if (sp == std::string::npos) continue;
    out.emplace(line.substr(0, sp), line.substr(sp + 1));
  }
  return out;
}

std::string joined_jumps(const HostConfig& h) {
  std::string out;
  for (const auto& j : h.proxy_jump) out += (out.empty() ? "" : ",") + j.alias;
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(patterns_wildcards_and_negation) {
  BOOST_TEST(match_pattern("*.example.com", "gpu.example.com"));
  BOOST_TEST(!match_pattern("*.example.com", "example.com"));
  BOOST_TEST(match_pattern("gpu-?", "gpu-1"));
  BOOST_TEST(!match_pattern("gpu-?", "gpu-12"));
  BOOST_TEST(match_pattern("*", ""));
  BOOST_TEST(match_pattern("a*b*c", "axxbyyc"));
  BOOST_TEST(!match_pattern("a*b*c", "axxbyy"));
  BOOST_TEST(match_pattern("GPU", "gpu"));
  BOOST_TEST(match_pattern_list({"*.lab", "!secret.lab"}, "box.lab"));
  BOOST_TEST(!match_pattern_list({"*.lab", "!secret.lab"}, "secret.lab"));
  BOOST_TEST(!match_pattern_list({"!secret.lab"}, "other"));  // only negations never match
  BOOST_TEST(match_pattern_list({"a,b,c"}, "b"));
}

BOOST_AUTO_TEST_CASE(destinations) {
  auto d = parse_destination("bob@gpu.example:2222");
  BOOST_REQUIRE(d);
  BOOST_TEST(*d->user == "bob");
  BOOST_TEST(d->host == "gpu.example");
  BOOST_TEST(*d->port == 2222);
  auto v6 = parse_destination("[::1]:22");
  BOOST_REQUIRE(v6);
  BOOST_TEST(v6->host == "::1");
  auto uri = parse_destination("ssh://u@h:7/");
  BOOST_REQUIRE(uri);
  BOOST_TEST(*uri->port == 7);
  BOOST_TEST(!parse_destination("h:99999"));
  BOOST_TEST(!parse_destination("h:"));
  BOOST_TEST(!parse_destination("@h"));
  BOOST_TEST(!parse_destination("a b"));
  BOOST_TEST(!parse_destination("::1"));
  BOOST_TEST(!parse_destination("alias").value().user.has_value());
}

BOOST_AUTO_TEST_CASE(first_match_wins_and_identity_files_accumulate) {
  TempDir t("ferry-sshcfg");
  auto cfg = write(t, "config",
                     "# a comment\n"
                     "Host gpu\n"
                     "  HostName 10.0.0.5\n"
                     "  User ubuntu\n"
                     "  IdentityFile ~/.ssh/gpu_%h_%r\n"
                     "Host gpu *.lab\n"
                     "  Port 2200\n"
                     "  User ignored\n"
                     "  IdentityFile=\"/keys/with space\"\n"
                     "Host *\n"
                     "  Port 22\n"
                     "  HostName never-used\n"
                     "  ServerAliveInterval 1m30s\n"
                     "  ConnectTimeout=7\n");
  auto h = resolve_ok(cfg, "gpu", test_local(t.path()));
  BOOST_TEST(h.hostname == "10.0.0.5");
  BOOST_TEST(h.user == "ubuntu");
  BOOST_TEST(h.port == 2200);
  BOOST_REQUIRE(h.identity_files.size() == 2u);
  BOOST_TEST(h.identity_files[0] == (t.path() / ".ssh/gpu_10.0.0.5_ubuntu").string());
  BOOST_TEST(h.identity_files[1] == "/keys/with space");
  BOOST_TEST(h.identity_files_explicit);
  BOOST_TEST(h.server_alive_interval_s == 90);
  BOOST_TEST(*h.connect_timeout_s == 7);

  auto other = resolve_ok(cfg, "x.lab", test_local(t.path()));
  BOOST_TEST(other.hostname == "never-used");
  BOOST_TEST(other.user == "ignored");
  BOOST_TEST(other.identity_files == std::vector<std::string>{"/keys/with space"});

  auto direct = resolve_ok(cfg, "root@gpu:4000", test_local(t.path()));
  BOOST_TEST(direct.user == "root");  // user@ and :port on the destination win over the config
  BOOST_TEST(direct.port == 4000);
  BOOST_TEST(direct.hostname == "10.0.0.5");
}

BOOST_AUTO_TEST_CASE(defaults_when_nothing_matches) {
  TempDir t("ferry-sshcfg");
  auto cfg = write(t, "config", "Host other\n  User x\n");
  auto h = resolve_ok(cfg, "plain.host", test_local(t.path()));
  BOOST_TEST(h.hostname == "plain.host");
  BOOST_TEST(h.user == "alice");
  BOOST_TEST(h.port == 22);
  BOOST_TEST((h.strict_host_key_checking == StrictHostKeyChecking::kYes));
  BOOST_REQUIRE(h.user_known_hosts_files.size() == 2u);
  BOOST_TEST(h.user_known_hosts_files[0] == (t.path() / ".ssh/known_hosts").string());
  BOOST_TEST(h.server_alive_count_max == 3);
  BOOST_TEST(!h.connect_timeout_s.has_value());
  BOOST_TEST(h.proxy_jump.empty());
}

BOOST_AUTO_TEST_CASE(hostname_token_and_negated_host_block) {
  TempDir t("ferry-sshcfg");
  auto cfg = write(t, "config",
                     "Host *.corp !bastion.corp\n"
                     "  HostName %h.internal\n"
                     "  ProxyJump jumper@bastion.corp:2022\n"
                     "Host bastion.corp\n"
                     "  User jb\n"
                     "  StrictHostKeyChecking accept-new\n"
                     "  IdentitiesOnly yes\n");
  auto h = resolve_ok(cfg, "db.corp", test_local(t.path()));
  BOOST_TEST(h.hostname == "db.corp.internal");
  BOOST_REQUIRE(h.proxy_jump.size() == 1u);
  BOOST_TEST(h.proxy_jump[0].user == "jumper");  // the hop's own user@ wins over its Host block
  BOOST_TEST(h.proxy_jump[0].port == 2022);
  BOOST_TEST(h.proxy_jump[0].hostname == "bastion.corp");  // the negation kept HostName away
  BOOST_TEST(h.proxy_jump[0].identities_only);
  BOOST_TEST((h.proxy_jump[0].strict_host_key_checking == StrictHostKeyChecking::kAcceptNew));
  BOOST_TEST((h.strict_host_key_checking == StrictHostKeyChecking::kYes));
}

BOOST_AUTO_TEST_CASE(proxy_jump_chains_and_none) {
  TempDir t("ferry-sshcfg");
  auto cfg = write(t, "config",
                     "Host target\n  ProxyJump hop2,hop3\n"
                     "Host hop2\n  ProxyJump hop1\n  Port 2002\n"
                     "Host nojump\n  ProxyJump none\n"
                     "Host hop* shouldnotapply\n  ProxyJump none\n"
                     "Host *\n  ProxyJump shouldnotapply\n");
  auto h = resolve_ok(cfg, "target", test_local(t.path()));
  BOOST_TEST(joined_jumps(h) == "hop1,hop2,hop3");
  BOOST_TEST(h.proxy_jump[1].port == 2002);
  auto n = resolve_ok(cfg, "nojump", test_local(t.path()));
  BOOST_TEST(n.proxy_jump.empty());
  auto loop = write(t, "loop", "Host a\n  ProxyJump b\nHost b\n  ProxyJump a\n");  // ssh: "jumphost loop"
  auto r = resolve_host(*parse_destination("a"), loop, test_local(t.path()), true);
  BOOST_TEST(!r.has_value());
}

BOOST_AUTO_TEST_CASE(include_with_glob_relative_to_dot_ssh_and_state_restore) {
  TempDir t("ferry-sshcfg");
  write(t, ".ssh/conf.d/10-gpu.conf", "Host gpu\n  HostName 192.0.2.1\nHost *\n  User from-include\n");
  write(t, ".ssh/conf.d/20-more.conf", "Port 2222\n");
  auto cfg = write(t, ".ssh/config",
                     "Host gpu\n"
                     "  Include conf.d/*.conf\n"
                     "  IdentityFile ~/k1\n"  // after the include: still inside "Host gpu"
                     "Host other\n"
                     "  Include conf.d/10-gpu.conf\n");
  auto h = resolve_ok(cfg, "gpu", test_local(t.path()));
  BOOST_TEST(h.hostname == "192.0.2.1");
  BOOST_TEST(h.user == "from-include");
  BOOST_TEST(h.port == 2222);
  BOOST_REQUIRE(h.identity_files.size() == 1u);
  BOOST_TEST(h.identity_files[0] == (t.path() / "k1").string());
  auto none = resolve_ok(cfg, "nomatch", test_local(t.path()));
  // Includes under a block that does not apply can apply nothing, even their own "Host *".
  BOOST_TEST(none.user == "alice");
  BOOST_TEST(none.port == 22);
}

BOOST_AUTO_TEST_CASE(match_blocks) {
  TempDir t("ferry-sshcfg");
  auto cfg = write(t, "config",
                     "Match originalhost gpu* user root\n  Port 1\n"
                     "Match host real.example\n  User matched\n"
                     "Match exec \"true\"\n  Port 3\n"
                     "Host gpu1\n  HostName real.example\n"
                     "Match all\n  Port 4\n");
  auto h = resolve_ok(cfg, "gpu1", test_local(t.path()));
  BOOST_TEST(h.port == 4);  // user is alice, so the first block does not apply; exec never applies
  BOOST_TEST(h.hostname == "real.example");
  BOOST_TEST(h.user == "alice");  // "Match host" ran before HostName was known
}

BOOST_AUTO_TEST_CASE(unknown_keywords_are_ignored) {
  TempDir t("ferry-sshcfg");
  auto cfg = write(t, "config",
                     "Host gpu\n  ForwardAgent yes\n  Ciphers aes128-ctr\n  LocalForward 8888 localhost:8888\n"
                     "  SomethingFromTheFuture on\n  HostName h\n");
  auto h = resolve_ok(cfg, "gpu", test_local(t.path()));
  BOOST_TEST(h.hostname == "h");
}

BOOST_AUTO_TEST_CASE(malformed_files_name_file_and_line) {
  TempDir t("ferry-sshcfg");
  struct Case {
    std::string text;
    int line;
    std::string needle;
  };
  std::vector<Case> cases{
      {"Host a\n  Port notanumber\n", 2, "bad port"},
      {"Host a\n  Port 70000\n", 2, "bad port"},
      {"\n\nHost\n", 3, "missing argument"},
      {"Host a\n  HostName \"unterminated\n", 2, "unterminated quote"},
      {"Host a\n  StrictHostKeyChecking maybe\n", 2, "accept-new"},
      {"Host a\n  ConnectTimeout soon\n", 2, "bad time"},
      {"Host a\n  IdentitiesOnly perhaps\n", 2, "yes or no"},
      {"Host other\n  Port x\n", 2, "bad port"},  // checked even outside the matching block
      {"Host a\n  ProxyJump h:notaport\n", 2, "ProxyJump"},
      {"Host a\n  HostName a b\n", 2, "extra arguments"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    auto cfg = write(t, "bad" + std::to_string(i), cases[i].text);
    auto r = resolve_host(*parse_destination("a"), cfg, test_local(t.path()), true);
    BOOST_REQUIRE_MESSAGE(!r.has_value(), "case " << i << " should fail");
    BOOST_TEST(r.error().file == cfg.string());
    BOOST_TEST(r.error().line == cases[i].line, "case " << i);
    BOOST_TEST(r.error().to_string().find(cases[i].needle) != std::string::npos, "case " << i << ": " << r.error().to_string());
  }
  auto inc = write(t, "includer", "Include " + (t.path() / "bad0").string() + "\n");
  auto r = resolve_host(*parse_destination("a"), inc, test_local(t.path()), true);
  BOOST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().file == (t.path() / "bad0").string());  // the included file, not the includer
  BOOST_TEST(!resolve_host(*parse_destination("a"), t.path() / "missing", test_local(t.path()), true).has_value());
  BOOST_TEST(resolve_host(*parse_destination("a"), t.path() / "missing", test_local(t.path()), false).has_value());
}

// The same corpus through OpenSSH itself: the fields ssh -G prints must agree.
BOOST_AUTO_TEST_CASE(agrees_with_ssh_dash_g) {
  TempDir t("ferry-sshcfg");
  auto local = current_local_context();
  auto cfg = write(t, "config",
                     "Host gpu gpu-?\n"
                     "  HostName %h.example.net\n"
                     "  User Ubuntu\n"
                     "  Port=2201\n"
                     "  ProxyJump jump1,me@jump2:2022\n"
                     "  StrictHostKeyChecking accept-new\n"
                     "Host *.example.net !bad.example.net\n"
                     "  User other\n"
                     "  Port 9\n"
                     "  IdentitiesOnly yes\n"
                     "Host \"quoted\"\n"
                     "  HostName q.example\n"
                     "  ConnectTimeout 2m\n"
                     "  ServerAliveInterval 15\n"
                     "  ServerAliveCountMax 5\n"
                     "  StrictHostKeyChecking no\n"
                     "Host *\n"
                     "  UserKnownHostsFile " + (t.path() / "kh1").string() + " " + (t.path() / "kh2").string() + "\n"
                     "  GSSAPIAuthentication no\n");
  for (std::string alias : {"gpu", "gpu-7", "bad.example.net", "x.example.net", "quoted", "unknown"}) {
    auto ours = resolve_ok(cfg, alias, local);
    auto theirs = ssh_dash_g(cfg, alias);
    BOOST_REQUIRE_MESSAGE(!theirs.empty(), "ssh -G produced nothing for " << alias);
    BOOST_TEST(ours.hostname == theirs["hostname"], alias);
    BOOST_TEST(ours.user == theirs["user"], alias);
    BOOST_TEST(std::to_string(ours.port) == theirs["port"], alias);
    BOOST_TEST((ours.identities_only ? "yes" : "no") == theirs["identitiesonly"], alias);
    std::string strict = theirs["stricthostkeychecking"];
    std::string expect = strict == "true" || strict == "ask" ? "yes" : strict == "false" ? "no" : strict;
    BOOST_TEST(std::string(to_string(ours.strict_host_key_checking)) == expect, alias);
    std::string timeout = ours.connect_timeout_s ? std::to_string(*ours.connect_timeout_s) : "none";
    BOOST_TEST(timeout == theirs["connecttimeout"], alias);
    BOOST_TEST(std::to_string(ours.server_alive_interval_s) == theirs["serveraliveinterval"], alias);
    BOOST_TEST(std::to_string(ours.server_alive_count_max) == theirs["serveralivecountmax"], alias);
    std::string kh;
    for (const auto& f : ours.user_known_hosts_files) kh += (kh.empty() ? "" : " ") + f;
    BOOST_TEST(kh == theirs["userknownhostsfile"], alias);
    if (theirs.contains("proxyjump")) {
      BOOST_TEST(ours.proxy_jump.size() == 2u, alias);
      BOOST_TEST(theirs["proxyjump"] == "jump1,me@jump2:2022", alias);
      BOOST_TEST(ours.proxy_jump[1].user == "me");
      BOOST_TEST(ours.proxy_jump[1].port == 2022);
    } else {
      BOOST_TEST(ours.proxy_jump.empty(), alias);
    }
  }
}

BOOST_AUTO_TEST_CASE(lookup_host_alias_names_hosts_not_wildcards) {
  TempDir home("ferry-sshcfg");
  write(home, ".ssh/config",
             "Include conf.d/*\n"  // first: an Include after a Host line belongs to that block
             "Host *\n  ServerAliveInterval 10\n"
             "Host gpu-box trainer !trainer-old\n  HostName 10.0.0.5\n"
             "Host lab-*\n  User me\n"
             "Host ??\n  User short\n");
  write(home, ".ssh/conf.d/cloud", "Host cloud-a100,cloud-h100\n  HostName h.example.com\n");
  auto local = test_local(home.path());
  auto lookup = [&](std::string_view alias) {
    auto r = lookup_host_alias(alias, std::nullopt, local);
    BOOST_REQUIRE_MESSAGE(r.has_value(), (r ? "" : r.error().to_string()));
    return *r;
  };
  BOOST_TEST(lookup("gpu-box").named);
  BOOST_TEST(lookup("trainer").named);
  BOOST_TEST(lookup("lab-7").named);           // a pattern with letters names it
  BOOST_TEST(lookup("cloud-h100").named);      // through Include, comma list
  BOOST_TEST(!lookup("gpu-bx").named);         // only "Host *" matches
  BOOST_TEST(!lookup("ab").named);             // "??" is wildcards only
  BOOST_TEST(!lookup("trainer-old").named);
  std::vector<std::string> expected{"cloud-a100", "cloud-h100", "gpu-box", "trainer"};
  BOOST_TEST(lookup("x").names == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(lookup_host_alias_files_missing_and_broken) {
  TempDir home("ferry-sshcfg");
  auto local = test_local(home.path());
  auto none = lookup_host_alias("gpu", std::nullopt, local);  // no ~/.ssh/config: nothing is named, no error
  BOOST_REQUIRE(none.has_value());
  BOOST_TEST(!none->named);
  auto missing = lookup_host_alias("gpu", std::string("~/nope.conf"), local);  // an explicit file must exist
  BOOST_REQUIRE(!missing.has_value());
  BOOST_TEST(missing.error().file == (home.path() / "nope.conf").string());
  write(home, "ferry.conf", "Host gpu\n  Port 99999\n");
  auto broken = lookup_host_alias("gpu", std::string("~/ferry.conf"), local);
  BOOST_REQUIRE(!broken.has_value());
  BOOST_TEST(broken.error().line == 2);
}
