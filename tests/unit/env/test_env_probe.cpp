// The env probe never hands ferry.json's interpreter to a shell: on host "local" hostile settings
// (a shell, `;`, `$(...)`, backticks, redirections) run nothing and say the interpreter could not
// be run, while words (`/usr/bin/env python3`, `python3 -I`) still work; over SSH the command
// line it builds gives back, through a real /bin/sh, exactly the argv it stands for.
#define BOOST_TEST_MODULE env_probe
#include <boost/test/unit_test.hpp>

#include <filesystem>

#include "helper/env/env_probe.hpp"
#include "helper/env/local_command.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "protocol/shell_words.hpp"
#include "tests/support/sh_words.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::env;
using Words = std::vector<std::string>;
namespace fs = std::filesystem;

namespace {

struct LocalHost {
  ferry::test::TempDir dir{"ferry-env-probe"};
  std::string marker = (dir / "MARKER").string();
  ferry::remote::LocalEndpoint endpoint{ferry::remote::LocalEndpointOptions{{}, dir / "sandbox", "probe", {}}};
};

}  // namespace

BOOST_AUTO_TEST_CASE(hostile_interpreters_run_nothing_locally) {
  LocalHost host;
  const std::string m = host.marker;
  for (const std::string& interpreter :
       {"sh -c touch${IFS}" + m, "/bin/sh -c 'touch " + m + "'", "python3;touch " + m, "python3;touch${IFS}" + m,
        "$(touch " + m + ")", "`touch " + m + "`", "python3$(touch${IFS}" + m + ")", "python3`touch${IFS}" + m + "`",
        "python3>" + m, "python3&&touch${IFS}" + m, "/usr/bin/env sh -c touch${IFS}" + m}) {
    auto r = probe_env(host.endpoint, interpreter, false, std::chrono::seconds(30));
    BOOST_TEST_REQUIRE(!r.has_value(), interpreter);
    BOOST_TEST((r.error().kind == ferry::ErrorKind::invalid_project), interpreter);
    BOOST_TEST(r.error().message.find("could not be run") != std::string::npos, interpreter << ": " << r.error().message);
    BOOST_TEST(!fs::exists(m), interpreter);
  }
}

BOOST_AUTO_TEST_CASE(hostile_arguments_stay_arguments) {
  LocalHost host;
  const std::string m = host.marker;
  // A real Python with words that a shell would have run: Python is handed them as file names
  // and options, so the probe fails, and nothing else happens.
  for (const std::string& interpreter : {"python3 '$(touch " + m + ")'", "python3 '`touch " + m + "`'", "python3 ';touch " + m + "'"}) {
    auto r = probe_env(host.endpoint, interpreter, false, std::chrono::seconds(30));
    BOOST_TEST(!r.has_value(), interpreter);
    BOOST_TEST(!fs::exists(m), interpreter);
  }
}

BOOST_AUTO_TEST_CASE(an_interpreter_with_words_still_works_locally) {
  LocalHost host;
  for (const char* interpreter : {"/usr/bin/env python3", "python3 -I", "'python3'"}) {
    auto r = probe_env(host.endpoint, interpreter, false, std::chrono::seconds(60));
    BOOST_TEST_REQUIRE(r.has_value(), interpreter << ": " << (r ? "" : r.error().message));
    BOOST_TEST(r->python.starts_with("3."));
    BOOST_TEST(r->interpreter == interpreter);
    BOOST_TEST(!r->sys_path.empty());
  }
}

BOOST_AUTO_TEST_CASE(a_missing_interpreter_says_it_could_not_be_run) {
  LocalHost host;
  auto r = probe_env(host.endpoint, "/nonexistent/python3 -u", false, std::chrono::seconds(30));
  BOOST_TEST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().message.find("could not be run") != std::string::npos, r.error().message);
  BOOST_TEST(r.error().message.find("/nonexistent/python3") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_ssh_command_gives_back_the_argv_through_sh) {
  ferry::test::TempDir dir("ferry-env-probe");
  const std::string m = (dir / "MARKER").string();
  // printf stands in for the interpreter: what it prints is the argv the box's shell built.
  const std::string interpreter = "printf '%s\\0' 'a b' '$(touch " + m + ")' '`touch " + m + "`' ';touch " + m +
                                  "' 'touch${IFS}" + m + "' '*' '>" + m + "' \"it's\" 'back\\slash' '' 'caf\xc3\xa9'";
  auto argv = probe_argv(interpreter, true);
  BOOST_TEST_REQUIRE(argv.has_value());
  auto command = probe_command(interpreter, true);
  BOOST_TEST_REQUIRE(command.has_value());
  auto r = ferry::test::run_sh(*command, dir.path().string());
  BOOST_TEST(r.exit_status == 0);
  const Words want(argv->begin() + 2, argv->end());  // after printf and its format
  BOOST_TEST(ferry::test::nul_words(r.out) == want, boost::test_tools::per_element());
  BOOST_TEST(want.back() == "torch");
  BOOST_TEST(!fs::exists(m));
}

BOOST_AUTO_TEST_CASE(the_ssh_command_quotes_the_interpreter) {
  const std::string c = probe_command("~/venv/bin/python -u", false).value();
  BOOST_TEST(c.starts_with("cd / && \"$HOME\"/'venv/bin/python' '-u' '-c' '"), c);
  BOOST_TEST(!c.ends_with(" 'torch'"));
  BOOST_TEST(probe_command("python3", true).value().ends_with(" 'torch'"));
  BOOST_TEST(probe_command("py\\'3", false).value().find("'py'\\''3'") != std::string::npos);
  auto refused = probe_command("sh -c touch${IFS}MARKER", false);
  BOOST_TEST_REQUIRE(!refused.has_value());
  BOOST_TEST(refused.error().find("shell") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(local_commands_run_without_a_shell) {
  ferry::test::TempDir dir("ferry-env-probe");
  auto r = run_local_command({"printf", "%s|", "$(echo x)", "a b", ";"}, dir.path().string(), std::chrono::seconds(10));
  BOOST_TEST_REQUIRE(r.has_value());
  BOOST_TEST(r->out == "$(echo x)|a b|;|");
  BOOST_TEST(r->exit_status == 0);
  auto missing = run_local_command({"no-such-program-ferry"}, "", std::chrono::seconds(10));
  BOOST_TEST_REQUIRE(!missing.has_value());
  BOOST_TEST(missing.error().find("no-such-program-ferry") != std::string::npos);
  auto status = run_local_command({"/bin/false"}, "", std::chrono::seconds(10));
  BOOST_TEST_REQUIRE(status.has_value());
  BOOST_TEST(status->exit_status == 1);
}
