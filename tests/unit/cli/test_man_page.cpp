// The roff man page generated from a small CLI11 app (man_page.hpp): its sections, a subsection per
// visible sub-command with options, arguments and footer (indented lines unfilled), the app's footer
// as EXIT STATUS, and roff escaping (minus signs, backslashes, control characters at a line's start,
// non-ASCII). groff reads the real ferry's page in tests/e2e/test_shell_completions.py.
#define BOOST_TEST_MODULE man_page
#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "helper/cli/man_page.hpp"

using namespace ferry::cli;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct Values {
  std::string level = "warn", host;
  bool dry_run = false;
  std::vector<std::string> paths;
};

std::unique_ptr<CLI::App> small_app(Values& v) {
  auto app = std::make_unique<CLI::App>("boat: a test app.\nIt sails \"far\".\n.dot and 'quote lines\n'x", "boat");
  app->fallthrough();
  app->footer("Exit status: 0 ok; 1 failed.");
  app->add_option("--log-level", v.level, "Log level")->check(CLI::IsMember({"debug", "warn"}))->capture_default_str();
  auto* sync = app->add_subcommand("sync", "Push files \xE2\x86\x92 the box");
  sync->add_flag("-n,--dry-run", v.dry_run, R"(Show what would change (C:\temp))");
  sync->add_option("paths", v.paths, "Files to push");
  auto* env = app->add_subcommand("env", "The box's Python");
  env->add_subcommand("sync", "Mirror packages")->add_option("host", v.host, "Which box")->required();
  env->footer("Also see `boat sync`:\n  boat env sync HOST");
  app->add_subcommand("man-page", "Print the man page")->group("");
  return app;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_page_has_its_sections_in_order) {
  Values v;
  auto app = small_app(v);
  std::string page = man_page(*app, "1.2.3");
  BOOST_TEST(page.starts_with(".\\\" Man page of boat"));
  BOOST_TEST(has(page, ".TH BOAT 1 \"\" \"boat 1.2.3\" \"User Commands\"\n"), page);
  BOOST_TEST(has(page, ".SH NAME\nboat \\- a test app\n.SH SYNOPSIS\n\\fBboat\\fR [\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR"), page);
  BOOST_TEST(has(page, ".SH DESCRIPTION\nIt sails \"far\".\n\\&.dot and 'quote lines\n\\&'x\n"), page);
  BOOST_TEST(has(page, ".SH GLOBAL OPTIONS\nThey may also follow the command.\n"), page);
  BOOST_TEST(has(page, ".TP\n\\fB\\-\\-log\\-level\\fR \\fITEXT\\fR\nLog level. One of: debug, warn. Default: warn\n"), page);
  std::vector<std::string> order{".SH NAME", ".SH SYNOPSIS", ".SH DESCRIPTION", ".SH GLOBAL OPTIONS", ".SH COMMANDS",
                                 ".SS \"boat sync\"", ".SS \"boat env\"", ".SS \"boat env sync\"", ".SH EXIT STATUS", ".SH VERSION"};
  std::size_t at = 0;
  for (const auto& heading : order) {
    auto found = page.find(heading, at);
    BOOST_TEST(found != std::string::npos, heading << " missing or out of order");
    if (found != std::string::npos) at = found;
  }
  BOOST_TEST(has(page, ".SH EXIT STATUS\n0 ok; 1 failed.\n"), page);
  BOOST_TEST(has(page, ".SH VERSION\nThis page describes boat 1.2.3.\n"));
  BOOST_TEST(!has(page, "man\\-page"));
}

BOOST_AUTO_TEST_CASE(each_command_has_its_synopsis_options_arguments_and_footer) {
  Values v;
  auto app = small_app(v);
  std::string page = man_page(*app, "1.2.3");
  BOOST_TEST(has(page, ".SS \"boat sync\"\n\\fBboat sync\\fR [\\fIOPTIONS\\fR] [\\fIpaths\\fR .\\|.\\|.]\n.PP\nPush files \\[u2192] the box\n"),
             page);
  BOOST_TEST(has(page, ".TP\n\\fB\\-n\\fR, \\fB\\-\\-dry\\-run\\fR\nShow what would change (C:\\etemp)\n"), page);
  BOOST_TEST(has(page, ".TP\n\\fIpaths\\fR\nFiles to push\n"), page);
  BOOST_TEST(has(page, "\\fBboat env\\fR [\\fIOPTIONS\\fR] \\fICOMMAND\\fR\n"), page);
  BOOST_TEST(has(page, ".PP\nCommands: \\fBsync\\fR (below).\n.PP\nAlso see \\(gaboat sync\\(ga:\n.nf\n  boat env sync HOST\n.fi\n"), page);
  BOOST_TEST(has(page, "\\fBboat env sync\\fR [\\fIOPTIONS\\fR] \\fIhost\\fR\n"), page);
}

BOOST_AUTO_TEST_CASE(help_and_the_copied_footer_appear_once) {
  Values v;
  auto app = small_app(v);
  std::string page = man_page(*app, "1.2.3");
  auto count = [&](const std::string& part) {
    int n = 0;
    for (auto at = page.find(part); at != std::string::npos; at = page.find(part, at + 1)) ++n;
    return n;
  };
  BOOST_TEST(count("Print this help message") == 1);  // in GLOBAL OPTIONS only
  BOOST_TEST(count("0 ok; 1 failed.") == 1);          // CLI11's copies in each sub-command are left out
}

BOOST_AUTO_TEST_CASE(roff_escape_guards_control_characters_and_encodes_non_ascii) {
  BOOST_TEST(roff_escape(".TH x") == "\\&.TH x");
  BOOST_TEST(roff_escape("'x") == "\\&'x");
  BOOST_TEST(roff_escape("a.b 'c'") == "a.b 'c'");
  BOOST_TEST(roff_escape("--x\\y") == "\\-\\-x\\ey");
  BOOST_TEST(roff_escape("caf\xC3\xA9") == "caf\\[u00E9]");
  BOOST_TEST(roff_escape("\xF0\x9F\x9A\xA2") == "\\[u1F6A2]");
  BOOST_TEST(roff_escape("bad \xC3") == "bad \\[uFFFD]");
}

BOOST_AUTO_TEST_CASE(a_footer_that_is_not_an_exit_status_goes_to_notes) {
  CLI::App app{"x: y", "x"};
  app.footer("See the docs.");
  std::string page = man_page(app, "0");
  BOOST_TEST(has(page, ".SH NOTES\nSee the docs.\n"), page);
  BOOST_TEST(!has(page, ".SH EXIT STATUS"));
}
