// The bash, zsh and fish scripts generated from a small CLI11 app (shell_completion.hpp): sub-commands
// (nested too) and options with their descriptions, values from a fixed set, a hidden command and a
// hidden option left out, descriptions with quotes quoted for each shell. The real shells run the
// scripts of the real ferry in tests/e2e/test_shell_completions.py.
#define BOOST_TEST_MODULE shell_completion
#include <boost/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "helper/cli/command_tree.hpp"
#include "helper/cli/shell_completion.hpp"

using namespace ferry::cli;

namespace {

struct Values {
  std::string level = "warn", dir, host, shell;
  bool dry_run = false, json = false, secret = false;
  std::vector<std::string> paths;
};

// ferry-like: global options that fall through, a command with a quote in its description and a
// list of paths, a nested command, a hidden command and a hidden option.
std::unique_ptr<CLI::App> small_app(Values& v) {
  auto app = std::make_unique<CLI::App>("boat: a test app.\nIt sails.", "boat");
  app->fallthrough();
  app->add_option("--log-level", v.level, "Log level")->check(CLI::IsMember({"debug", "warn"}))->capture_default_str();
  app->add_option("-C,--dir", v.dir, "Work in DIR");
  auto* sync = app->add_subcommand("sync", "Push the project's files to \"the box\"");
  sync->add_flag("-n,--dry-run", v.dry_run, "Show what would change; it's safe");
  sync->add_flag("--secret", v.secret, "hidden")->group("");
  sync->add_option("paths", v.paths, "Files to push");
  auto* env = app->add_subcommand("env", "The box's Python");
  env->add_flag("--json", v.json, "Print JSON");
  auto* env_sync = env->add_subcommand("sync", "Mirror the [box] packages");
  env_sync->add_option("--host", v.host, "Which box");
  auto* shell = app->add_subcommand("completion", "Print a completion script");
  shell->add_option("shell", v.shell, "The shell")->check(CLI::IsMember({"bash", "zsh", "fish"}))->required();
  app->add_subcommand("man-page", "Print the man page")->group("");
  return app;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(the_tree_has_visible_commands_options_and_inherited_globals) {
  Values v;
  auto app = small_app(v);
  CommandInfo root = read_command_tree(*app);
  BOOST_TEST(root.name() == "boat");
  BOOST_REQUIRE_EQUAL(root.commands.size(), 3u);  // man-page is hidden
  const CommandInfo& sync = root.commands[0];
  BOOST_TEST(sync.full_name() == "boat sync");
  BOOST_REQUIRE_EQUAL(sync.options.size(), 2u);  // --help and --dry-run; --secret is hidden
  BOOST_TEST(sync.options[1].names == (std::vector<std::string>{"-n", "--dry-run"}), boost::test_tools::per_element());
  BOOST_TEST(!sync.options[1].takes_value());
  BOOST_REQUIRE_EQUAL(sync.arguments.size(), 1u);
  BOOST_TEST(sync.arguments[0].many);
  BOOST_REQUIRE_EQUAL(sync.inherited.size(), 2u);  // --log-level, -C/--dir; not the root's --help again
  BOOST_TEST(sync.inherited[0].choices == (std::vector<std::string>{"debug", "warn"}), boost::test_tools::per_element());
  BOOST_TEST(sync.inherited[0].default_value == "warn");
  const CommandInfo& env_sync = root.commands[1].commands.at(0);
  BOOST_TEST(env_sync.full_name() == "boat env sync");
  BOOST_TEST(env_sync.inherited.size() == 3u);  // env's --json and the root's two
  BOOST_TEST(all_commands(root).size() == 5u);
}

BOOST_AUTO_TEST_CASE(bash_completes_commands_options_and_values_by_command_path) {
  Values v;
  auto app = small_app(v);
  std::string s = bash_completion(*app);
  BOOST_TEST(has(s, "complete -F _boat 'boat'\n"));
  BOOST_TEST(has(s, "'boat') subs='sync env completion' opts='-h --help --log-level -C --dir' valued='--log-level -C --dir' args=0 ;;"),
             s);
  BOOST_TEST(has(s, "'boat sync') subs='' opts='-h --help -n --dry-run --log-level -C --dir' valued='--log-level -C --dir' args=1 ;;"), s);
  BOOST_TEST(has(s, "'boat env') subs='sync' opts='-h --help --json"), s);
  BOOST_TEST(has(s, "'boat env sync') subs='' opts='-h --help --host --json --log-level -C --dir' valued='--host --log-level -C --dir'"),
             s);
  BOOST_TEST(has(s, "'boat|--log-level') choices='debug warn' ;;"), s);
  BOOST_TEST(has(s, "'boat completion|') choices='bash zsh fish' ;;"), s);
  BOOST_TEST(has(s, "compgen -f -- \"$cur\""));  // file names for other values and arguments
  BOOST_TEST(!has(s, "man-page"));
  BOOST_TEST(!has(s, "--secret"));
}

BOOST_AUTO_TEST_CASE(zsh_uses_arguments_and_describe_with_quoted_descriptions) {
  Values v;
  auto app = small_app(v);
  std::string s = zsh_completion(*app);
  BOOST_TEST(s.starts_with("#compdef boat\n"));
  BOOST_TEST(has(s, "_boat() {\n"));
  BOOST_TEST(has(s, "'sync:Push the project'\\''s files to \"the box\"'"), s);
  BOOST_TEST(has(s, "_describe -t commands 'boat command' commands"));
  BOOST_TEST(has(s, "'--log-level=[Log level]:log-level:(debug warn)'"), s);
  BOOST_TEST(has(s, "'(-n --dry-run)-n[Show what would change; it'\\''s safe]'"), s);
  BOOST_TEST(has(s, "'(-C --dir)-C+[Work in DIR]:dir:_files'"), s);
  BOOST_TEST(has(s, "'*:paths:_files'"), s);
  BOOST_TEST(has(s, "'1:shell:(bash zsh fish)'"), s);
  BOOST_TEST(has(s, "('sync') _boat_env_sync && ret=0 ;;"), s);
  BOOST_TEST(has(s, "'sync:Mirror the [box] packages'"), s);
  BOOST_TEST(has(s, "'--host=[Which box]:host:_files'"), s);
  BOOST_TEST(has(s, "compdef _boat 'boat'"));
  BOOST_TEST(!has(s, "man-page"));
  BOOST_TEST(!has(s, "--secret"));
}

BOOST_AUTO_TEST_CASE(zsh_escapes_brackets_in_option_descriptions) {
  CLI::App app{"x", "x"};
  bool flag = false;
  app.add_flag("--odd", flag, R"(a ] and a \ here)");
  BOOST_TEST(has(zsh_completion(app), R"('--odd[a \] and a \\ here]')"), zsh_completion(app));
}

BOOST_AUTO_TEST_CASE(fish_completes_each_command_path_with_descriptions) {
  Values v;
  auto app = small_app(v);
  std::string s = fish_completion(*app);
  BOOST_TEST(has(s, "complete -c 'boat' -f\n"));
  BOOST_TEST(has(s, "complete -c 'boat' -n '__boat_at boat' -a 'sync' -d 'Push the project\\'s files to \"the box\"'\n"), s);
  BOOST_TEST(has(s, "complete -c 'boat' -n '__boat_at boat sync' -s 'n' -l 'dry-run' -d 'Show what would change; it\\'s safe'\n"), s);
  BOOST_TEST(has(s, "complete -c 'boat' -n '__boat_at boat sync' -l 'log-level' -x -a 'debug warn' -d 'Log level'\n"), s);
  BOOST_TEST(has(s, "complete -c 'boat' -n '__boat_at boat env sync' -l 'host' -r -F -d 'Which box'\n"), s);
  BOOST_TEST(has(s, "complete -c 'boat' -n '__boat_at boat sync' -F\n"), s);  // paths: file names
  BOOST_TEST(has(s, "complete -c 'boat' -n '__boat_at boat completion' -a 'bash zsh fish' -d 'The shell'\n"), s);
  BOOST_TEST(has(s, "case 'boat env sync'\n            printf '%s\\n' --host --log-level -C --dir\n"), s);
  BOOST_TEST(!has(s, "man-page"));
  BOOST_TEST(!has(s, "secret"));
}

BOOST_AUTO_TEST_CASE(long_descriptions_are_cut_to_one_line) {
  BOOST_TEST(summary("first line\nsecond") == "first line");
  std::string long_one(30, 'a');
  long_one += " " + std::string(100, 'b');
  BOOST_TEST(summary(long_one) == std::string(30, 'a') + "...");
  BOOST_TEST(summary(std::string(120, 'c')).size() == 100u);
}
