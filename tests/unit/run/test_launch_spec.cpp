// launch_spec: interpreter splitting, argv resolution, cwd and env rules of `ferry run`.
#define BOOST_TEST_MODULE launch_spec
#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "helper/run/launch_spec.hpp"

using namespace ferry::run;
using Words = std::vector<std::string>;

BOOST_AUTO_TEST_CASE(split_words_handles_quotes_and_escapes) {
  BOOST_TEST(*split_words("/opt/conda/bin/python -u") == (Words{"/opt/conda/bin/python", "-u"}));
  BOOST_TEST(*split_words("  'my python'  -X \"dev mode\" a\\ b ") == (Words{"my python", "-X", "dev mode", "a b"}));
  BOOST_TEST(*split_words("\"a\\\"b\"''") == (Words{"a\"b"}));
  BOOST_TEST(split_words("").value().empty());
  BOOST_TEST(!split_words("python 'unterminated").has_value());
  BOOST_TEST(!split_words("python \\").has_value());
}

BOOST_AUTO_TEST_CASE(scripts_get_the_interpreter_others_run_as_given) {
  BOOST_TEST(*resolve_argv({"train.py", "--lr", "0.1"}, "/opt/conda/bin/python -u") ==
             (Words{"/opt/conda/bin/python", "-u", "train.py", "--lr", "0.1"}));
  BOOST_TEST(*resolve_argv({"-m", "pytest", "-x"}, "python3") == (Words{"python3", "-m", "pytest", "-x"}));
  BOOST_TEST(*resolve_argv({"python", "x.py"}, "/venv/bin/python") == (Words{"/venv/bin/python", "x.py"}));
  BOOST_TEST(*resolve_argv({"nvidia-smi", "-L"}, "python3") == (Words{"nvidia-smi", "-L"}));
  BOOST_TEST(*resolve_argv({"./run.sh"}, "python3") == (Words{"./run.sh"}));
  BOOST_TEST(*resolve_argv({".py"}, "python3") == (Words{".py"}));  // a file named ".py" is not a script name
  BOOST_TEST(!resolve_argv({}, "python3").has_value());
  BOOST_TEST(!resolve_argv({"x.py"}, "  ").has_value());
}

BOOST_AUTO_TEST_CASE(the_interpreter_is_words_never_a_shell) {
  // Shell syntax in the setting is characters of a word; a shell as the interpreter is refused.
  BOOST_TEST(*resolve_argv({"x.py"}, "python3 '$(touch M)'") == (Words{"python3", "$(touch M)", "x.py"}));
  BOOST_TEST(*resolve_argv({"x.py"}, "conda run -n x python") == (Words{"conda", "run", "-n", "x", "python", "x.py"}));
  auto shell = resolve_argv({"x.py"}, "sh -c touch${IFS}MARKER");
  BOOST_TEST_REQUIRE(!shell.has_value());
  BOOST_TEST(shell.error().find("shell") != std::string::npos);
  BOOST_TEST(!resolve_argv({"-c", "print(1)"}, "/usr/bin/env bash -c x").has_value());
  // A command that is not a script runs as given: ferry.json's interpreter has no part in it.
  BOOST_TEST(*resolve_argv({"bash", "-c", "echo"}, "sh") == (Words{"bash", "-c", "echo"}));
}

BOOST_AUTO_TEST_CASE(relative_paths_stay_inside) {
  BOOST_TEST(*normalize_relative("") == ".");
  BOOST_TEST(*normalize_relative("./a//b/.") == "a/b");
  BOOST_TEST(!normalize_relative("/etc").has_value());
  BOOST_TEST(!normalize_relative("a/../../b").has_value());
  BOOST_TEST(!normalize_relative("..").has_value());
}

BOOST_AUTO_TEST_CASE(run_spec_merges_env_with_cli_winning) {
  LaunchRequest r;
  r.command = {"train.py"};
  r.interpreter = "python -u";
  r.config_env = {{"A", "config"}, {"B", "config"}, {"PYTHONPATH", "/extra"}};
  r.cli_env = {"A=cli", "C=x=y", "A=cli2"};
  r.mapping_root = "/home/u/proj";
  r.remote_base = "";
  r.cwd = "sub/dir";
  auto s = make_run_spec(r);
  BOOST_REQUIRE(s.has_value());
  BOOST_TEST(s->argv == (Words{"python", "-u", "train.py"}));
  BOOST_TEST(s->env.at("A") == "cli2");
  BOOST_TEST(s->env.at("B") == "config");
  BOOST_TEST(s->env.at("C") == "x=y");
  BOOST_TEST(s->env.at("PYTHONPATH") == "/home/u/proj:/extra");
  BOOST_TEST(s->env.at("PYTHONUNBUFFERED") == "1");
  BOOST_TEST(s->cwd == "sub/dir");
  auto j = s->to_json();
  BOOST_TEST(j["argv"].size() == 3u);
  BOOST_TEST(!j.contains("tty"));
}

BOOST_AUTO_TEST_CASE(run_spec_cwd_is_under_the_mapping_base) {
  LaunchRequest r;
  r.command = {"ls"};
  r.remote_base = "projects/demo";
  BOOST_TEST(make_run_spec(r)->cwd == "projects/demo");
  r.cwd = "data";
  BOOST_TEST(make_run_spec(r)->cwd == "projects/demo/data");
  r.cwd = "../other";
  auto bad = make_run_spec(r);
  BOOST_REQUIRE(!bad.has_value());
  BOOST_TEST(bad.error().find("leaves the mapping root") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(run_spec_rejects_bad_env_and_keeps_explicit_unbuffered) {
  LaunchRequest r;
  r.command = {"ls"};
  r.cli_env = {"NOEQUALS"};
  BOOST_TEST(!make_run_spec(r).has_value());
  r.cli_env = {"=v"};
  BOOST_TEST(!make_run_spec(r).has_value());
  r.cli_env = {"PYTHONUNBUFFERED=0"};
  auto s = make_run_spec(r);
  BOOST_TEST(s->env.at("PYTHONUNBUFFERED") == "0");
  BOOST_TEST(!s->env.contains("PYTHONPATH"));  // no mapping root known: nothing invented
  r.tty = true;
  r.cols = 120;
  r.rows = 40;
  auto j = make_run_spec(r)->to_json();
  BOOST_TEST(j["tty"] == true);
  BOOST_TEST(j["cols"] == 120);
  BOOST_TEST(j["rows"] == 40);
}

// A Slurm project's run is a job of its own (slurm set, no terminal), or a step of a running
// allocation: srun in front of the argv, no job options, and a terminal allowed (srun --pty).
BOOST_AUTO_TEST_CASE(a_slurm_run_is_a_job_or_a_step_of_the_allocation) {
  LaunchRequest r;
  r.command = {"train.py"};
  r.interpreter = "python3";
  r.mapping_root = "/home/u/proj";
  r.slurm = ferry::protocol::SlurmJobOptions{};
  r.tty = true;
  BOOST_TEST(!make_run_spec(r).has_value());  // a job has no terminal
  r.tty = false;
  auto job = make_run_spec(r);
  BOOST_REQUIRE(job.has_value());
  BOOST_TEST(job->slurm.has_value());
  BOOST_TEST(job->argv == (Words{"python3", "train.py"}));
  r.allocation = "12";
  r.tty = true;
  auto step = make_run_spec(r);
  BOOST_REQUIRE(step.has_value());
  BOOST_TEST(!step->slurm.has_value());
  BOOST_TEST(step->tty);
  BOOST_TEST(step->argv.front() == "srun");
  BOOST_TEST((std::find(step->argv.begin(), step->argv.end(), "--jobid=12") != step->argv.end()));
  BOOST_TEST((std::find(step->argv.begin(), step->argv.end(), "--pty") != step->argv.end()));
  BOOST_TEST((Words(step->argv.end() - 2, step->argv.end()) == Words{"python3", "train.py"}));
}
