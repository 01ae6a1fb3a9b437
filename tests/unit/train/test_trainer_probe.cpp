// The box probe's answer and what it says is missing: each missing piece is one line naming the
// command that fixes it, in the order a user meets them (torch, headers, compiler, C++17, CMake);
// a cached trainer needs nothing else. The script runs for real here (its compiler check, on this
// machine) and in test_trainer_install (over SSH).
#define BOOST_TEST_MODULE trainer_probe
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "helper/train/trainer_probe.hpp"
#include "tests/support/sh_words.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ferry::training;

namespace {

const char* kBuildable =
    "Welcome to the box\n"  // login noise is skipped
    "home=/home/u\ncache=/home/u/.cache/ferry/train\npython=/home/u/venv/bin/python\n"
    "python_torch=2.5.1+cu124\ntorch_version=2.5.1+cu124\ntorch_prefix=/home/u/venv/lib/python3.12/site-packages/torch/share/cmake\n"
    "torch_source=python\ntorch_headers=/home/u/venv/lib/python3.12/site-packages/torch/include\n"
    "cxx=/usr/bin/c++\ncxx_version=c++ (Debian 12.2.0-14) 12.2.0\ncxx17=yes\n"
    "cmake=/home/u/.local/bin/cmake\ncmake_version=cmake version 3.30.0\n";

}  // namespace

BOOST_AUTO_TEST_CASE(a_buildable_box_parses_and_has_no_problem) {
  auto p = parse_trainer_probe(kBuildable);
  BOOST_TEST(p.cache == "/home/u/.cache/ferry/train");
  BOOST_TEST(p.torch_version == "2.5.1+cu124");
  BOOST_TEST(p.torch_source == "python");
  BOOST_TEST(p.cxx17);
  BOOST_TEST(!p.have_pack);
  BOOST_TEST(p.ready.empty());
  BOOST_TEST(!trainer_probe_problem(p, "python3").has_value());
}

BOOST_AUTO_TEST_CASE(a_cached_trainer_needs_nothing_else) {
  auto p = parse_trainer_probe("torch_version=1.13.0\nready=/c/0123456789abcdef-1.13.0/ferry-train\nversion=ferry-train 0.1.0 (x)\n");
  BOOST_TEST(p.ready == "/c/0123456789abcdef-1.13.0/ferry-train");
  BOOST_TEST(p.version == "ferry-train 0.1.0 (x)");
  BOOST_TEST(!trainer_probe_problem(p, "python3").has_value());  // no compiler, no cmake: not needed
}

BOOST_AUTO_TEST_CASE(each_missing_piece_names_its_fix) {
  auto base = parse_trainer_probe(kBuildable);
  auto no_torch = base;
  no_torch.torch_version.clear();
  no_torch.python_torch.clear();
  auto m = trainer_probe_problem(no_torch, "python3");
  BOOST_TEST_REQUIRE(m.has_value());
  BOOST_TEST(m->find("no torch for /home/u/venv/bin/python") != std::string::npos);
  BOOST_TEST(m->find("-m pip install torch") != std::string::npos);

  auto no_cmake_files = no_torch;
  no_cmake_files.python_torch = "1.13.0a0";  // Debian's python3-torch without libtorch-dev
  m = trainer_probe_problem(no_cmake_files, "python3");
  BOOST_TEST_REQUIRE(m.has_value());
  BOOST_TEST(m->find("has no C++ CMake files") != std::string::npos);

  auto no_headers = base;
  no_headers.torch_headers.clear();
  m = trainer_probe_problem(no_headers, "python3");
  BOOST_TEST_REQUIRE(m.has_value());
  BOOST_TEST(m->find("lacks its C++ headers") != std::string::npos);

  auto no_cxx = base;
  no_cxx.cxx.clear();
  m = trainer_probe_problem(no_cxx, "python3");
  BOOST_TEST_REQUIRE(m.has_value());
  BOOST_TEST(m->find("no C++ compiler") != std::string::npos);
  BOOST_TEST(m->find("apt install g++") != std::string::npos);

  auto old_cxx = base;
  old_cxx.cxx17 = false;
  old_cxx.cxx_version = "g++ (Ubuntu 8.4.0-3ubuntu2) 8.4.0";
  m = trainer_probe_problem(old_cxx, "python3");
  BOOST_TEST_REQUIRE(m.has_value());
  BOOST_TEST(m->find("8.4.0") != std::string::npos);
  BOOST_TEST(m->find("needs a C++17 compiler (g++ 9 or later, clang 10 or later)") != std::string::npos);
  BOOST_TEST(m->find("set CXX in ferry.json's env") != std::string::npos);

  auto no_cmake = base;
  no_cmake.cmake.clear();
  m = trainer_probe_problem(no_cmake, "python3");
  BOOST_TEST_REQUIRE(m.has_value());
  BOOST_TEST(m->find("pip install cmake ninja") != std::string::npos);
  BOOST_TEST(m->find('\n') == std::string::npos);  // one line
}

// The probe's compiler check, run for real: this machine's c++ builds the pack's C++17; the same
// compiler held to C++14 (a stand-in for one without C++17: the last -std wins) does not.
BOOST_AUTO_TEST_CASE(the_compiler_check_compiles_cxx17_for_real) {
  ferry::test::TempDir dir("ferry-trainer-probe-cxx");
  const std::string old_cxx = (dir / "old-c++").string();
  ferry::test::write_file(old_cxx, "#!/bin/sh\nexec c++ \"$@\" -std=c++14\n");
  std::filesystem::permissions(old_cxx, std::filesystem::perms::owner_all);
  const std::map<std::string, std::string> env{{"FERRY_TRAIN_CACHE", (dir / "cache").string()}};
  auto probe_with = [&](const std::string& cxx) {
    auto with = env;
    with["CXX"] = cxx;
    auto r = ferry::test::run_sh(trainer_probe_script("/usr/bin/python3", "0123456789abcdef", with).value(), dir.path().string());
    BOOST_TEST(r.exit_status == 0);
    return parse_trainer_probe(r.out);
  };
  const auto now = probe_with("c++");
  BOOST_TEST(!now.cxx.empty());
  BOOST_TEST(now.cxx17);
  const auto old = probe_with(old_cxx);
  BOOST_TEST(old.cxx == old_cxx);
  BOOST_TEST(!old.cxx17);
  auto m = trainer_probe_problem(old, "/usr/bin/python3");
  BOOST_TEST_REQUIRE(m.has_value());
  BOOST_TEST(m->find("needs a C++17 compiler (g++ 9 or later, clang 10 or later)") != std::string::npos, *m);
}

BOOST_AUTO_TEST_CASE(the_script_quotes_what_it_is_given) {
  auto s = trainer_probe_script("'~/my venv/bin/python'", "0123456789abcdef", {{"CXX", "g++-13 'x'"}}).value();
  BOOST_TEST(s.find("export CXX='g++-13 '\\''x'\\'''") != std::string::npos);
  BOOST_TEST(s.find("set -- \"$HOME\"/'my venv/bin/python'\n") != std::string::npos);
  BOOST_TEST(s.find("H='0123456789abcdef'") != std::string::npos);
  // And it is a script sh accepts.
  const std::string check = "sh -n -c " + shell_quote(s);
  BOOST_TEST(std::system(check.c_str()) == 0);
}

BOOST_AUTO_TEST_CASE(the_prelude_hands_sh_the_interpreter_and_env_exactly) {
  ferry::test::TempDir dir("ferry-trainer-probe");
  const std::string m = (dir / "MARKER").string();
  // printf stands in for the interpreter: "$@" must give back its words, and $X the env value.
  const std::string interpreter = "printf '%s\\0' 'a b' '$(touch " + m + ")' '`touch " + m + "`' ';touch " + m +
                                  "' 'touch${IFS}" + m + "' '*' \"it's\" ''";
  const std::string value = "$(touch " + m + ")'\"`;\n*";
  auto prelude = trainer_env_prelude(interpreter, {{"X", value}});
  BOOST_TEST_REQUIRE(prelude.has_value());
  auto r = ferry::test::run_sh(*prelude + "\"$@\"; printf '%s\\0' \"$X\"\n", dir.path().string());
  BOOST_TEST(r.exit_status == 0);
  const std::vector<std::string> want{"a b", "$(touch " + m + ")", "`touch " + m + "`", ";touch " + m,
                                      "touch${IFS}" + m, "*", "it's", "", value};
  BOOST_TEST(ferry::test::nul_words(r.out) == want, boost::test_tools::per_element());
  BOOST_TEST(!std::filesystem::exists(m));
}

BOOST_AUTO_TEST_CASE(the_prelude_refuses_what_cannot_go_into_a_script) {
  auto shell = trainer_env_prelude("sh -c touch${IFS}MARKER", {});
  BOOST_TEST_REQUIRE(!shell.has_value());
  BOOST_TEST(shell.error().find("/interpreter") != std::string::npos);
  auto name = trainer_env_prelude("python3", {{"A;touch MARKER;B", "x"}});
  BOOST_TEST_REQUIRE(!name.has_value());
  BOOST_TEST(name.error().find("/env") != std::string::npos);
  BOOST_TEST(!trainer_probe_script("python3 'x", "k", {}).has_value());
}
