// ferry.json: parsing, validation errors by JSON pointer, finding the file, the starter config.
#define BOOST_TEST_MODULE project_config
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "helper/deploy/host_spec.hpp"
#include "helper/deploy/project_config.hpp"
#include "tests/unit/deploy/config_corpus.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using ferry::deploy::load_project;
using ferry::deploy::parse_project;
using nlohmann::json;

namespace {

using ferry::test::TempDir;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

}  // namespace

BOOST_AUTO_TEST_CASE(corpus_good_configs_parse_and_bad_ones_name_their_pointer) {
  for (const auto& entry : ferry::test::config_corpus()) {
    BOOST_TEST_CONTEXT(entry.label) {
      auto result = parse_project(json::parse(entry.json), "/tmp/proj");
      if (entry.good()) {
        BOOST_TEST(result.has_value());
        if (!result) BOOST_TEST_MESSAGE(result.error().to_string());
      } else {
        BOOST_REQUIRE(!result.has_value());
        BOOST_TEST(result.error().pointer == std::string(entry.pointer));
        BOOST_TEST(!result.error().message.empty());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(defaults_fill_in) {
  auto c = parse_project(json::object(), "/tmp/My Project!");
  BOOST_REQUIRE(c.has_value());
  BOOST_TEST(c->host == "local");
  BOOST_TEST(c->name == "My-Project-");  // folder name made safe for a sandbox dir
  BOOST_REQUIRE(c->mappings.size() == 1u);
  BOOST_TEST(c->mappings[0].local == ".");
  BOOST_TEST(c->mappings[0].remote == "~/ferry/My-Project-");
  BOOST_TEST(c->interpreter == "python3");
  // The root as this system spells "/tmp/My Project!" (on Windows, with the current drive).
  BOOST_TEST(c->root == fs::absolute("/tmp/My Project!"));
}

BOOST_AUTO_TEST_CASE(full_config_fields_land_in_the_struct) {
  auto c = parse_project(json::parse(R"({"name": "p", "host": "me@box:2200",
      "mappings": [{"local": "src", "remote": "/w/src"}], "env": {"A": "1"},
      "tunnels": [{"name": "tb", "remotePort": 6006}, {"name": "dbg", "kind": "reverse", "localPort": 1, "remotePort": 2}],
      "autostop": {"enabled": true, "idleMinutes": 5}, "sshConfig": "/etc/ssh/alt"})"),
                         "/x");
  BOOST_REQUIRE(c.has_value());
  BOOST_TEST(c->env.at("A") == "1");
  BOOST_TEST(c->tunnels[0].local_port == 6006);  // defaults to the remote port
  BOOST_TEST(c->tunnels[0].kind == "local");
  BOOST_TEST(c->tunnels[1].kind == "reverse");
  BOOST_TEST(c->tunnels[1].local_port == 1);
  BOOST_TEST(c->autostop.enabled);
  BOOST_TEST(c->autostop.idle_minutes == 5);
  BOOST_TEST(c->autostop.action == "stop");
  BOOST_TEST(*c->ssh_config == "/etc/ssh/alt");
  json j = ferry::deploy::to_json(*c);
  BOOST_TEST(j["tunnels"][1]["localPort"] == 1);
  BOOST_TEST(j["autostop"]["idleMinutes"] == 5);
  BOOST_TEST(j["sshConfig"] == "/etc/ssh/alt");
  BOOST_TEST(j["root"] == fs::absolute("/x").string());
}

BOOST_AUTO_TEST_CASE(protect_patterns_land_in_the_struct_and_the_ide_view) {
  auto c = parse_project(json::parse(R"({"protect": ["/data/", "outputs/", "*.ckpt"]})"), "/x");
  BOOST_REQUIRE(c.has_value());
  BOOST_TEST((c->protect == std::vector<std::string>{"/data/", "outputs/", "*.ckpt"}));
  BOOST_TEST(ferry::deploy::to_json(*c)["protect"] == json::parse(R"(["/data/", "outputs/", "*.ckpt"])"));
  auto none = parse_project(json::object(), "/x");
  BOOST_REQUIRE(none.has_value());
  BOOST_TEST(none->protect.empty());
  auto bad = parse_project(json::parse(R"({"protect": [""]})"), "/x");
  BOOST_REQUIRE(!bad.has_value());
  BOOST_TEST(bad.error().pointer == "/protect/0");
}

BOOST_AUTO_TEST_CASE(auto_forward_ports_is_on_by_default_off_or_a_list) {
  auto none = parse_project(json::object(), "/x");
  BOOST_REQUIRE(none.has_value());
  BOOST_TEST(none->auto_forward_ports.enabled);
  BOOST_TEST(none->auto_forward_ports.ports.empty());
  auto off = parse_project(json::parse(R"({"autoForwardPorts": false})"), "/x");
  BOOST_REQUIRE(off.has_value());
  BOOST_TEST(!off->auto_forward_ports.enabled);
  auto some = parse_project(json::parse(R"({"autoForwardPorts": [6006, 8888]})"), "/x");
  BOOST_REQUIRE(some.has_value());
  BOOST_TEST(some->auto_forward_ports.enabled);
  BOOST_TEST((some->auto_forward_ports.ports == std::vector<int>{6006, 8888}));
  BOOST_TEST(ferry::deploy::to_json(*some)["autoForwardPorts"] == json::parse("[6006, 8888]"));
  auto bad = parse_project(json::parse(R"({"autoForwardPorts": [8080, 70000]})"), "/x");
  BOOST_REQUIRE(!bad.has_value());
  BOOST_TEST(bad.error().pointer == "/autoForwardPorts/1");
  auto word = parse_project(json::parse(R"({"autoForwardPorts": "yes"})"), "/x");
  BOOST_REQUIRE(!word.has_value());
  BOOST_TEST(word.error().pointer == "/autoForwardPorts");
}

BOOST_AUTO_TEST_CASE(the_daemons_idle_time_lands_in_the_struct_and_the_ide_view) {
  auto none = parse_project(json::parse(R"({"host": "local"})"), "/tmp/p");
  BOOST_REQUIRE(none.has_value());
  BOOST_TEST(!none->daemon_idle_minutes.has_value());
  BOOST_TEST(!ferry::deploy::to_json(*none).contains("daemon"));
  auto off = parse_project(json::parse(R"({"host": "local", "daemon": {"idleMinutes": 0}})"), "/tmp/p");
  BOOST_REQUIRE(off.has_value());
  BOOST_TEST(off->daemon_idle_minutes.value_or(-1) == 0);
  BOOST_TEST(ferry::deploy::to_json(*off)["daemon"]["idleMinutes"] == 0);
}

BOOST_AUTO_TEST_CASE(launch_entries_land_in_the_struct_and_the_ide_view) {
  auto c = parse_project(json::parse(R"({"launch": [
      {"name": "train", "script": "train.py", "args": ["--lr", "0.1"], "env": {"SEED": "1"}, "cwd": "runs"},
      {"name": "eval", "kind": "debug", "module": "pkg.eval"},
      {"name": "fit", "kind": "train", "config": "train/quick.json"}]})"),
                         "/x");
  BOOST_REQUIRE(c.has_value());
  BOOST_REQUIRE_EQUAL(c->launch.size(), 3u);
  const auto& run = c->launch[0];
  BOOST_TEST(run.kind == "run");  // the default
  BOOST_TEST(*run.script == "train.py");
  BOOST_TEST(!run.module);
  BOOST_TEST((run.args == std::vector<std::string>{"--lr", "0.1"}));
  BOOST_TEST(run.env.at("SEED") == "1");
  BOOST_TEST(run.cwd == "runs");
  BOOST_TEST(*c->launch[1].module == "pkg.eval");
  BOOST_TEST(*c->launch[2].config == "train/quick.json");
  BOOST_TEST(ferry::deploy::to_json(*c)["launch"] == json::parse(R"([
      {"name": "train", "kind": "run", "script": "train.py", "args": ["--lr", "0.1"], "env": {"SEED": "1"}, "cwd": "runs"},
      {"name": "eval", "kind": "debug", "module": "pkg.eval", "args": [], "env": {}},
      {"name": "fit", "kind": "train", "config": "train/quick.json", "args": [], "env": {}}])"));
  BOOST_TEST(ferry::deploy::to_json(*parse_project(json::object(), "/x"))["launch"] == json::array());
}

BOOST_AUTO_TEST_CASE(launch_errors_say_what_to_do) {
  auto dup = parse_project(json::parse(R"({"launch": [{"name": "a", "script": "a.py"}, {"name": "a", "module": "m"}]})"), "/x");
  BOOST_REQUIRE(!dup);
  BOOST_TEST(dup.error().to_string() == "/launch/1/name: another launch entry (/launch/0) has this name");
  auto outside = parse_project(
      json::parse(R"({"mappings": [{"local": "src", "remote": "/w"}], "launch": [{"name": "a", "script": "a.py"}]})"), "/x");
  BOOST_REQUIRE(!outside);
  BOOST_TEST(outside.error().message.find("not inside the first mapping's folder \"src\"") != std::string::npos,
             outside.error().message);
  auto both = parse_project(json::parse(R"({"launch": [{"name": "a", "script": "a.py", "module": "a"}]})"), "/x");
  BOOST_REQUIRE(!both);
  BOOST_TEST(both.error().message == "give script or module, not both");
}

BOOST_AUTO_TEST_CASE(path_in_mapping_is_lexical) {
  using ferry::deploy::Mapping;
  using ferry::deploy::path_in_mapping;
  BOOST_TEST(path_in_mapping("train.py", Mapping{".", "/r"}).value() == "train.py");
  BOOST_TEST(path_in_mapping("./a/./b.py", Mapping{".", "/r"}).value() == "a/b.py");
  BOOST_TEST(path_in_mapping("src/a.py", Mapping{"src/", "/r"}).value() == "a.py");
  BOOST_TEST(path_in_mapping("src/pkg/a.py", Mapping{"./src", "/r"}).value() == "pkg/a.py");
  BOOST_TEST(!path_in_mapping("srcx/a.py", Mapping{"src", "/r"}));
  BOOST_TEST(!path_in_mapping("a.py", Mapping{"src", "/r"}));
  BOOST_TEST(!path_in_mapping("src", Mapping{"src", "/r"}));
  BOOST_TEST(!path_in_mapping(".", Mapping{".", "/r"}));
}

BOOST_AUTO_TEST_CASE(error_messages_say_what_was_expected) {
  auto e = parse_project(json::parse(R"({"mappings": [{"remote": ""}]})"), "/x");
  BOOST_REQUIRE(!e);
  BOOST_TEST(e.error().to_string() == "/mappings/0/remote: expected a non-empty string");
  auto typo = parse_project(json::parse(R"({"mapings": []})"), "/x");
  BOOST_REQUIRE(!typo);
  BOOST_TEST(typo.error().message.find("did you mean \"mappings\"") != std::string::npos);
  auto port = parse_project(json::parse(R"({"tunnels": [{"name": "t", "remotePort": 0}]})"), "/x");
  BOOST_REQUIRE(!port);
  BOOST_TEST(port.error().message == "expected a port number from 1 to 65535");
}

// Issue #17: a mapping to "/" listed the whole filesystem (minutes, then a timeout) and --delete
// would have offered to remove everything ferry did not put there. Such roots are refused when
// the config is read, which the CLI, `ferry serve`'s project/load and the IDE diagnostics share.
BOOST_AUTO_TEST_CASE(mapping_roots_that_are_not_a_project_directory_are_refused) {
  struct Case {
    const char* remote;
    const char* why;
  };
  for (const Case& c : {Case{"/", "whole filesystem"}, Case{"//", "whole filesystem"}, Case{"/.", "whole filesystem"},
                        Case{"~", "home directory itself"}, Case{"~/", "home directory itself"},
                        Case{"~/.", "home directory itself"}, Case{"/root", "home directory itself"},
                        Case{"/home", "home directory itself"}, Case{"/home/bob/", "home directory itself"},
                        Case{"/etc", "system directory"}, Case{"/etc/ssh", "system directory"},
                        Case{"/usr/local", "system directory"}, Case{"/proc/self", "system directory"},
                        Case{"/sys", "system directory"}, Case{"/dev/pts/x", "system directory"},
                        Case{"/dev/shm", "shared by other users"}, Case{"/dev/shmx", "system directory"},
                        Case{"/boot", "system directory"}, Case{"/lib64", "system directory"},
                        Case{"/var/log/app", "system directory"}, Case{"/run/user/1000", "system directory"},
                        Case{"/var", "shared by other users"}, Case{"/tmp/", "shared by other users"},
                        Case{"/var/tmp", "shared by other users"}, Case{"/opt", "shared by other users"},
                        Case{"/mnt", "shared by other users"}, Case{"/media", "shared by other users"},
                        Case{"/srv", "shared by other users"}}) {
    BOOST_TEST_CONTEXT(c.remote) {
      json doc{{"name", "resnet"}, {"mappings", json::array({json{{"local", "."}, {"remote", c.remote}}})}};
      auto e = parse_project(doc, "/x");
      BOOST_REQUIRE(!e);
      BOOST_TEST(e.error().pointer == "/mappings/0/remote");
      BOOST_TEST(e.error().message.find(c.why) != std::string::npos, e.error().message);
      std::string quoted(1, '"');  // (built up: GCC 12 warns falsely about "\"" + string + "\"")
      quoted.append(c.remote).push_back('"');
      BOOST_TEST(e.error().message.find(quoted) != std::string::npos, e.error().message);
      BOOST_TEST(e.error().message.find("e.g. \"~/work/resnet\"") != std::string::npos, e.error().message);
    }
  }
  // The suggestion names the folder when the config has no name.
  auto unnamed = parse_project(json::parse(R"({"mappings": [{"remote": "/"}]})"), "/src/my-proj");
  BOOST_REQUIRE(!unnamed);
  BOOST_TEST(unnamed.error().message.find("\"~/work/my-proj\"") != std::string::npos, unnamed.error().message);
  // A project's own directory below those is fine.
  for (const char* ok : {"~/work/resnet", "/home/bob/resnet", "/root/resnet", "/var/tmp/resnet", "/opt/resnet", "/dev/shm/resnet",
                         "/mnt/data/resnet", "/tmp/ferry-resnet", "/srv/resnet", "/workspace", "/etcetera", "/homes"}) {
    json doc{{"mappings", json::array({json{{"remote", ok}}})}};
    BOOST_TEST(parse_project(doc, "/x").has_value(), ok);
  }
}

// Issue #41: "~/work/p " made a directory whose name ends in a space on the box. Blanks at either
// end of a mapping path are refused with a message that says so, never trimmed; inside a path
// they are fine.
BOOST_AUTO_TEST_CASE(mapping_paths_with_blanks_at_either_end_are_refused) {
  struct Case {
    const char* local;
    const char* remote;
    const char* pointer;
  };
  for (const Case& c : {Case{".", "~/work/p ", "/mappings/0/remote"}, Case{".", " ~/work/p", "/mappings/0/remote"},
                        Case{".", "/data/p\t", "/mappings/0/remote"}, Case{".", "/data/p\n", "/mappings/0/remote"},
                        Case{"src ", "/data/p", "/mappings/0/local"}, Case{" src", "/data/p", "/mappings/0/local"},
                        Case{"\tsrc", "/data/p", "/mappings/0/local"}}) {
    BOOST_TEST_CONTEXT("local '" << c.local << "' remote '" << c.remote << "'") {
      json doc{{"mappings", json::array({json{{"local", c.local}, {"remote", c.remote}}})}};
      auto e = parse_project(doc, "/x");
      BOOST_REQUIRE(!e);
      BOOST_TEST(e.error().pointer == c.pointer);
      BOOST_TEST(e.error().message.find("starts or ends with whitespace") != std::string::npos, e.error().message);
    }
  }
  json inner{{"mappings", json::array({json{{"local", "my data"}, {"remote", "~/work/my project"}}})}};
  BOOST_TEST(parse_project(inner, "/x").has_value());
}

BOOST_AUTO_TEST_CASE(host_grammar) {
  auto h = ferry::deploy::parse_host("ubuntu@10.0.0.5:2222");
  BOOST_REQUIRE(h.has_value());
  BOOST_TEST(*h->user == "ubuntu");
  BOOST_TEST(h->host == "10.0.0.5");
  BOOST_TEST(*h->port == 2222);
  auto v6 = ferry::deploy::parse_host("[::1]:22");
  BOOST_REQUIRE(v6.has_value());
  BOOST_TEST(v6->host == "::1");
  BOOST_TEST(*v6->port == 22);
  BOOST_TEST(ferry::deploy::parse_host("local")->is_local());
  BOOST_TEST(!ferry::deploy::parse_host("me@local")->is_local());
  BOOST_TEST(!ferry::deploy::parse_host("box:").has_value());
  BOOST_TEST(!ferry::deploy::parse_host(std::string(300, 'a')).has_value());
}

BOOST_AUTO_TEST_CASE(load_reports_the_file_and_json_syntax_position) {
  TempDir t("ferry-deploy");
  write(t.path() / "ferry.json", "{\n  \"host\": \"local\",\n  \"exclude\": [1,]\n}\n");
  auto r = load_project(t.path());
  BOOST_REQUIRE(!r);
  BOOST_TEST(r.error().file == (t.path() / "ferry.json").string());
  BOOST_TEST(r.error().message.find("line 3") != std::string::npos, r.error().message);

  write(t.path() / "ferry.json", R"({"host": "a b"})");
  auto bad = load_project(t.path() / "ferry.json");
  BOOST_REQUIRE(!bad);
  BOOST_TEST(bad.error().to_string().starts_with((t.path() / "ferry.json").string() + ": /host: "));

  auto missing = load_project(t.path() / "nope");
  BOOST_REQUIRE(!missing);
  BOOST_TEST(missing.error().message == "cannot read the file");

  write(t.path() / "ferry.json", R"({"name": "x"})");
  auto ok = load_project(t.path());
  BOOST_REQUIRE(ok.has_value());
  BOOST_TEST(ok->root == fs::absolute(t.path()));
}

BOOST_AUTO_TEST_CASE(find_project_file_walks_up) {
  TempDir t("ferry-deploy");
  write(t.path() / "proj" / "ferry.json", "{}");
  fs::create_directories(t.path() / "proj" / "src" / "deep" / "er");
  write(t.path() / "proj" / "src" / "deep" / "file.py", "");
  auto from_dir = ferry::deploy::find_project_file(t.path() / "proj" / "src" / "deep" / "er");
  BOOST_REQUIRE(from_dir.has_value());
  BOOST_TEST(*from_dir == t.path() / "proj" / "ferry.json");
  auto from_file = ferry::deploy::find_project_file(t.path() / "proj" / "src" / "deep" / "file.py");
  BOOST_REQUIRE(from_file.has_value());
  BOOST_TEST(*from_file == t.path() / "proj" / "ferry.json");
  // A directory named ferry.json is not a project file.
  fs::create_directories(t.path() / "other" / "ferry.json");
  fs::create_directories(t.path() / "other" / "sub");
  auto none = ferry::deploy::find_project_file(t.path() / "other" / "sub");
  BOOST_TEST((!none || *none != t.path() / "other" / "ferry.json"));
  // The nearest one wins.
  write(t.path() / "proj" / "src" / "ferry.json", "{}");
  BOOST_TEST(*ferry::deploy::find_project_file(t.path() / "proj" / "src" / "deep") == t.path() / "proj" / "src" / "ferry.json");
}

BOOST_AUTO_TEST_CASE(starter_config_round_trips) {
  json doc = ferry::deploy::starter_config("me@gpu:2222", "/workspace/demo", "demo");
  auto c = parse_project(doc, "/home/me/demo");
  BOOST_REQUIRE(c.has_value());
  BOOST_TEST(c->name == "demo");
  BOOST_TEST(c->host == "me@gpu:2222");
  BOOST_TEST(c->mappings[0].remote == "/workspace/demo");
  // Through text and back, as `ferry init` writes it and `ferry` reads it.
  TempDir t("ferry-deploy");
  write(t.path() / "ferry.json", doc.dump(2));
  auto loaded = load_project(t.path());
  BOOST_REQUIRE(loaded.has_value());
  json a = ferry::deploy::to_json(*loaded);
  json b = ferry::deploy::to_json(*parse_project(doc, t.path()));
  BOOST_TEST(a == b);
  BOOST_TEST(!parse_project(ferry::deploy::starter_config("bad host", "~/x", "n"), "/x").has_value());
}
