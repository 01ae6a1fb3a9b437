// ferry.json diagnostics end to end: exact ranges in multi-line non-ASCII files, one diagnostic
// per problem whichever checks see it, each of ferry's rules firing and not firing, and a fixed
// file giving none. The ssh config is a temporary home's.
#define BOOST_TEST_MODULE project_diagnostics
#include <boost/test/unit_test.hpp>

#include "helper/diagnostics/config_diagnostics.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::diagnostics;
namespace fs = std::filesystem;

namespace ferry::diagnostics {
std::ostream& boost_test_print_type(std::ostream& os, const TextPosition& p) { return os << p.line << ":" << p.character; }
std::ostream& boost_test_print_type(std::ostream& os, const TextRange& r) {
  boost_test_print_type(os, r.start) << "-";
  return boost_test_print_type(os, r.end);
}
std::ostream& boost_test_print_type(std::ostream& os, Severity s) { return os << static_cast<int>(s); }
}  // namespace ferry::diagnostics

namespace {

TextRange at(int line, int from, int to) { return {{line, from}, {line, to}}; }

// A project folder and a home whose ~/.ssh/config names gpu-box and lab-*.
struct Fixture {
  ferry::test::TempDir home{"ferry-diag-home"};
  ferry::test::TempDir project{"ferry-diag-proj"};
  Fixture() {
    ferry::test::write_file(home / ".ssh/config", "Host *\n  ServerAliveInterval 5\nHost gpu-box\n  HostName 10.1.2.3\nHost lab-*\n  User me\n");
  }
  ProjectFileContext context() const { return {{"alice", home.path()}, true}; }
  std::vector<Diagnostic> diagnose(std::string_view text) const {
    return diagnose_project_file(text, project / "ferry.json", context());
  }
  // The one diagnostic expected.
  Diagnostic only(std::string_view text) const {
    auto d = diagnose(text);
    BOOST_REQUIRE_MESSAGE(d.size() == 1u, d.size() << " diagnostics for " << text << (d.empty() ? "" : "; first: " + d[0].message));
    return d[0];
  }
};

std::string describe(const std::vector<Diagnostic>& ds) {
  std::string out;
  for (const auto& d : ds) out += d.code + " " + d.pointer + ": " + d.message + "\n";
  return out;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(project_file, Fixture)

BOOST_AUTO_TEST_CASE(a_good_file_has_none) {
  std::string text = R"({
  "name": "resume-gen",
  "host": "gpu-box",
  "interpreter": "/opt/résumé/bin/python",
  "mappings": [{"local": ".", "remote": "~/ferry/p"}, {"local": "data/été", "remote": "/data"}],
  "exclude": ["*.pt"],
  "protect": ["/data/", "outputs/"],
  "env": {"CUDA_VISIBLE_DEVICES": "0"},
  "tunnels": [{"name": "jupyter", "remotePort": 8888}],
  "autostop": {"enabled": true, "idleMinutes": 45, "action": "notify"}
})";
  auto d = diagnose(text);
  BOOST_TEST(d.empty(), describe(d));
  BOOST_TEST(diagnose("{}").empty());
}

BOOST_AUTO_TEST_CASE(syntax_error_is_one_diagnostic_at_the_exact_place) {
  std::string text = "{\n  \"name\": \"\xF0\x9F\x9A\x80 p\", \"host\" \"gpu-box\"\n}";
  auto d = only(text);
  BOOST_TEST(d.code == "json");
  BOOST_TEST((d.severity == Severity::error));
  BOOST_TEST(d.range == at(1, 25, 34));  // the string where ':' was expected: 🚀 counts 2
  BOOST_TEST(d.message.find("expected ':'") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_number_no_double_holds_is_a_json_error_not_a_crash) {
  auto d = only("{\"tunnels\": [{\"name\": \"t\", \"remotePort\": 1e999}]}");
  BOOST_TEST(d.code == "json");
  BOOST_TEST(d.range == at(0, 41, 46));
}

// An untrusted project's ferry.json nested 100,000 levels deep: one json error on the first
// bracket past the limit, before anything recursive sees the document.
BOOST_AUTO_TEST_CASE(a_file_nested_too_deep_is_one_json_error_at_the_bracket) {
  const std::string deep = "{\"name\": \"p\",\n \"exclude\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  auto d = only(deep);
  BOOST_TEST(d.code == "json");
  BOOST_TEST((d.severity == Severity::error));
  BOOST_TEST(d.message == "nested deeper than 256 levels");
  BOOST_TEST(d.range == at(1, 12 + 255, 12 + 256));  // the root is the first level
}

BOOST_AUTO_TEST_CASE(text_after_a_nul_byte_is_ignored_and_said_so) {
  auto d = only(std::string("{\"host\": \"local\"}\n\0\"host\": 1", 28));
  BOOST_TEST(d.code == "json");
  BOOST_TEST((d.severity == Severity::warning));
  BOOST_TEST(d.range == (TextRange{{1, 0}, {1, 10}}));
}

BOOST_AUTO_TEST_CASE(unknown_field_is_marked_on_its_key_with_a_suggestion) {
  std::string text = "{\n  \"interpreter\": \"\xC3\xA9t\xC3\xA9\",\n  \"hots\": \"gpu-box\"\n}";
  auto d = only(text);
  BOOST_TEST(d.code == "schema");
  BOOST_TEST(d.pointer == "/hots");
  BOOST_TEST(d.message == R"("hots" is not a known field (did you mean "host"?))");
  BOOST_TEST(d.range == at(2, 2, 8));
}

BOOST_AUTO_TEST_CASE(a_bad_value_is_marked_on_the_value) {
  std::string text = "{\n  \"tunnels\": [\n    {\"name\": \"d\xC3\xA9\", \"kind\": \"dynamic\", \"remotePort\": 1}\n  ]\n}";
  // The name is not [A-Za-z0-9._-]: two errors, each on its own value.
  auto d = diagnose(text);
  BOOST_REQUIRE_EQUAL(d.size(), 2u);
  BOOST_TEST(d[0].pointer == "/tunnels/0/name");
  BOOST_TEST(d[0].range == at(2, 13, 17));
  BOOST_TEST(d[0].message == "expected 1 to 64 letters, digits, '.', '_' or '-'");  // the validator's words, not the regex
  BOOST_TEST(d[1].pointer == "/tunnels/0/kind");
  BOOST_TEST(d[1].range == at(2, 27, 36));
  BOOST_TEST(d[1].message == R"(expected one of "local", "reverse", got "dynamic")");
}

BOOST_AUTO_TEST_CASE(pattern_errors_get_the_validators_words_even_after_its_first_error) {
  auto d = diagnose(R"({"hots": 1, "name": "a b", "host": "my box"})");
  BOOST_REQUIRE_EQUAL(d.size(), 3u);
  BOOST_TEST(d[1].pointer == "/name");
  BOOST_TEST(d[1].message == "expected 1 to 100 letters, digits, '.', '_' or '-' (it names the sandbox folder)");
  BOOST_TEST(d[2].pointer == "/host");
  BOOST_TEST(d[2].message == "expected \"local\", an ssh config alias, or [user@]host[:port] with a port from 1 to 65535");
}

BOOST_AUTO_TEST_CASE(a_missing_member_is_marked_on_the_parent_brace_once) {
  std::string text = "{\n  \"mappings\": [\n    {\"local\": \".\"}\n  ]\n}";
  auto d = only(text);  // the schema and parse_project both see it: one diagnostic
  BOOST_TEST(d.pointer == "/mappings/0/remote");
  BOOST_TEST(d.message == R"(missing required field "remote")");
  BOOST_TEST(d.range == at(2, 4, 5));
}

BOOST_AUTO_TEST_CASE(every_independent_problem_is_reported_in_order) {
  std::string text = "{\n  \"name\": \"a b\",\n  \"host\": \"gpu-box\",\n  \"autostop\": {\"idleMinutes\": 0},\n  \"sshConfg\": \"x\"\n}";
  auto d = diagnose(text);
  BOOST_REQUIRE_EQUAL(d.size(), 3u);
  BOOST_TEST(d[0].pointer == "/name");
  BOOST_TEST(d[1].pointer == "/autostop/idleMinutes");
  BOOST_TEST(d[1].message == "expected an integer from 1 to 10080, got 0");
  BOOST_TEST(d[2].pointer == "/sshConfg");
  BOOST_TEST(d[2].message == R"("sshConfg" is not a known field (did you mean "sshConfig"?))");
}

BOOST_AUTO_TEST_CASE(a_fixed_file_clears_its_diagnostics) {
  BOOST_TEST(!diagnose(R"({"host": "gpu-box", "mappings": [{"local": "../x", "remote": "/r"}]})").empty());
  BOOST_TEST(diagnose(R"({"host": "gpu-box", "mappings": [{"local": "x", "remote": "/r"}]})").empty());
  BOOST_TEST(!diagnose(R"({"host": "gpu-bx"})").empty());
  BOOST_TEST(diagnose(R"({"host": "gpu-box"})").empty());
}

BOOST_AUTO_TEST_CASE(unknown_ssh_alias_warns_with_a_suggestion) {
  std::string text = "{\n  \"name\": \"\xF0\x9F\x98\x80\", \"host\": \"gpu-bx\"\n}";
  // (the name's emoji is a schema error too; the host warning is the second diagnostic)
  auto d = diagnose(text);
  BOOST_REQUIRE_EQUAL(d.size(), 2u);
  BOOST_TEST(d[1].code == "ferry.unknownHost");
  BOOST_TEST((d[1].severity == Severity::warning));
  BOOST_TEST(d[1].message == R"("gpu-bx" is not a Host in ~/.ssh/config (did you mean "gpu-box"?); ssh would look it up as a host name)");
  BOOST_TEST(d[1].range == at(1, 24, 32));
}

BOOST_AUTO_TEST_CASE(host_names_that_are_not_aliases_are_not_checked) {
  for (std::string host : {"local", "gpu-box", "lab-7", "me@gpu-bx", "gpu-bx:2222", "203.0.113.7", "[2001:db8::1]:22",
                           "gpu.example.com", "localhost"})
    BOOST_TEST(diagnose(R"({"host": ")" + host + R"("})").empty(), host);
  // Nothing is read when the caller says so.
  BOOST_TEST(diagnose_project_file(R"({"host": "gpu-bx"})", project / "ferry.json", {{"alice", home.path()}, false}).empty());
  // Without ~/.ssh/config every bare name is unknown.
  ferry::test::TempDir empty_home;
  auto d = diagnose_project_file(R"({"host": "gpu-box"})", project / "ferry.json", {{"alice", empty_home.path()}, true});
  BOOST_REQUIRE_EQUAL(d.size(), 1u);
  BOOST_TEST(d[0].message == R"("gpu-box" is not a Host in ~/.ssh/config; ssh would look it up as a host name)");
}

BOOST_AUTO_TEST_CASE(the_projects_ssh_config_is_used_relative_to_the_project) {
  ferry::test::write_file(project / "ssh/ferry.conf", "Host trainer\n  HostName 10.0.0.9\n");
  BOOST_TEST(diagnose(R"({"host": "trainer", "sshConfig": "ssh/ferry.conf"})").empty());
  auto d = only(R"({"host": "gpu-box", "sshConfig": "ssh/ferry.conf"})");  // only that file is read, like ssh -F
  BOOST_TEST(d.message == R"("gpu-box" is not a Host in ssh/ferry.conf; ssh would look it up as a host name)");
  ferry::test::write_file(home / "other.conf", "Host trainer\n");
  BOOST_TEST(diagnose(R"({"host": "trainer", "sshConfig": "~/other.conf"})").empty());
}

BOOST_AUTO_TEST_CASE(an_unreadable_or_broken_ssh_config_is_reported_where_it_is_named) {
  auto d = only(R"({"host": "trainer", "sshConfig": "missing.conf"})");
  BOOST_TEST(d.code == "ferry.sshConfig");
  BOOST_TEST(d.pointer == "/sshConfig");
  BOOST_TEST(d.message == "cannot check the host against the ssh config: " + (project / "missing.conf").string() + ": cannot be read");
  ferry::test::write_file(home / ".ssh/config", "Host gpu-box\n  Port ssh\n");
  d = only(R"({"host": "gpu-box"})");
  BOOST_TEST(d.code == "ferry.sshConfig");
  BOOST_TEST(d.pointer == "/host");
  BOOST_TEST(d.message.ends_with(".ssh/config:2: bad port \"ssh\""));
}

BOOST_AUTO_TEST_CASE(mapping_outside_the_project_is_one_error_on_the_value) {
  std::string text = "{\n  \"mappings\": [\n    {\"local\": \"../\xC3\xA9t\xC3\xA9\", \"remote\": \"/r\"}\n  ]\n}";
  auto d = only(text);  // not also the schema's pattern and parse_project's message
  BOOST_TEST(d.code == "ferry.mappingOutsideProject");
  BOOST_TEST((d.severity == Severity::error));
  BOOST_TEST(d.range == at(2, 14, 22));
  fs::path outside = (project.path().parent_path() / "\xC3\xA9t\xC3\xA9").lexically_normal();
  BOOST_TEST(d.message == "\"../\xC3\xA9t\xC3\xA9\" leaves the project: it is " + outside.string() + ", outside " + project.path().string());

  d = only(R"({"mappings": [{"local": "/etc", "remote": "/r"}]})");
  BOOST_TEST(d.code == "ferry.mappingOutsideProject");
  BOOST_TEST(d.message == "\"/etc\" is outside the project (" + project.path().string() + "): a mapping's local folder must be inside it");
  d = only(R"({"mappings": [{"local": "src/../../x", "remote": "/r"}]})");
  BOOST_TEST(d.code == "ferry.mappingOutsideProject");
}

BOOST_AUTO_TEST_CASE(mapping_inside_but_misspelt_gets_the_path_to_write) {
  auto d = only(R"({"mappings": [{"local": "a/../b", "remote": "/r"}]})");
  BOOST_TEST(d.code == "ferry.mappingPath");
  BOOST_TEST(d.message == R"(write it without "..": "b")");
  d = only(R"({"mappings": [{"local": ")" + (project / "src/models").string() + R"(", "remote": "/r"}]})");
  BOOST_TEST(d.code == "ferry.mappingPath");
  BOOST_TEST(d.message == R"(write the folder relative to the project root: "src/models")");
  d = only(R"({"mappings": [{"local": "src/..", "remote": "/r"}]})");
  BOOST_TEST(d.message == R"(write it without "..": ".")");
  for (std::string ok : {".", "src", "a..b/.c", "./src"})
    BOOST_TEST(diagnose(R"({"mappings": [{"local": ")" + ok + R"(", "remote": "/r"}]})").empty(), ok);
}

BOOST_AUTO_TEST_CASE(protect_rules_that_shadow_the_whole_mapping_warn) {
  for (std::string pattern : {"*", "**", "/*", "/**", "**/*"}) {
    auto d = only(R"({"protect": ["/data/", ")" + pattern + R"("]})");
    BOOST_TEST(d.code == "ferry.protectShadowsMapping", pattern);
    BOOST_TEST(d.pointer == "/protect/1", pattern);
    BOOST_TEST((d.severity == Severity::warning));
    BOOST_TEST(d.message == "\"" + pattern + "\" protects every path of the mapping: a push would write nothing; protect "
                                              "remote-only folders such as \"/data/\"");
  }
  for (std::string pattern : {"/", ".", "./", "/."}) {
    auto d = only(R"({"protect": [")" + pattern + R"("]})");
    BOOST_TEST(d.code == "ferry.protectShadowsMapping", pattern);
    BOOST_TEST(d.message.starts_with("\"" + pattern + "\" means the whole mapping"), d.message);
  }
  // Together they cover everything: the warning is on the one that completes it.
  auto d = only(R"({"protect": ["*.py", "/data/", "[!.]*", ".*"]})");
  BOOST_TEST(d.pointer == "/protect/3");
}

BOOST_AUTO_TEST_CASE(protect_rules_that_leave_something_to_write_are_fine) {
  for (std::string list : {R"(["/data/", "outputs/", "*.ckpt"])", R"(["*/"])", R"(["**/"])", R"(["*", "!src/"])",
                           R"(["**", "!*.py"])", R"(["*.py"])", R"([])", R"(["..", "/.."])"})
    BOOST_TEST(diagnose(R"({"protect": )" + list + "}").empty(), list);
}

BOOST_AUTO_TEST_CASE(a_repeated_key_warns_on_the_ignored_one) {
  std::string text = "{\n  \"host\": \"gpu-bx\",\n  \"host\": \"gpu-box\"\n}";
  auto d = only(text);
  BOOST_TEST(d.code == "json.duplicateKey");
  BOOST_TEST((d.severity == Severity::warning));
  BOOST_TEST(d.range == at(1, 2, 8));
}

BOOST_AUTO_TEST_CASE(huge_files_are_capped_and_huge_strings_do_not_crash) {
  std::string many = R"({"exclude": [)";
  for (int i = 0; i < 50000; ++i) many += std::string(i ? "," : "") + "1";  // on one line: nothing quadratic
  many += "]}";
  auto d = diagnose(many);
  BOOST_TEST(d.size() == kMaxDiagnostics);
  BOOST_TEST(d.front().pointer == "/exclude/0");
  std::string path(300000, 'a');  // parse_project's std::regex would overflow the stack on this
  d = diagnose(R"({"mappings": [{"local": ")" + path + R"(", "remote": "/r"}]})");
  BOOST_REQUIRE_EQUAL(d.size(), 1u);
  BOOST_TEST(d[0].message == "too long: 300000 bytes (at most 4096)");
}

BOOST_AUTO_TEST_CASE(lsp_json_shape) {
  auto d = only(R"({"hots": 1})");
  auto j = to_lsp_json(d);
  BOOST_TEST(j["range"]["start"]["line"] == 0);
  BOOST_TEST(j["range"]["start"]["character"] == 1);
  BOOST_TEST(j["range"]["end"]["character"] == 7);
  BOOST_TEST(j["severity"] == 1);
  BOOST_TEST(j["code"] == "schema");
  BOOST_TEST(j["source"] == "ferry");
  BOOST_TEST(j["data"]["pointer"] == "/hots");
}

BOOST_AUTO_TEST_SUITE_END()
