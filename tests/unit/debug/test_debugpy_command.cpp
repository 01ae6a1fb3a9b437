// debugpy_command: argv for the check, the debuggee and the listen probe; install advice; the
// PyCharm line. The probe also runs for real against a listening socket.
#define BOOST_TEST_MODULE debugpy_command
#include <boost/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helper/debug/debugpy_command.hpp"
#include "helper/remote/child_process.hpp"
#include "tests/support/loopback_port.hpp"

using namespace ferry::debug;
using namespace std::chrono_literals;
using Argv = std::vector<std::string>;

BOOST_AUTO_TEST_CASE(interpreter_with_arguments_is_split) {
  auto argv = interpreter_argv("  /opt/conda/bin/python   -u ");
  BOOST_REQUIRE(argv);
  BOOST_TEST((*argv == Argv{"/opt/conda/bin/python", "-u"}));
  auto blank = interpreter_argv("   ");
  BOOST_REQUIRE(!blank);
  BOOST_TEST(blank.error().find("/interpreter") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(check_imports_debugpy_with_the_configured_interpreter) {
  auto argv = debugpy_check_argv({"/opt/conda/bin/python", "-u"}, 5678);
  BOOST_REQUIRE_EQUAL(argv.size(), 5u);
  BOOST_TEST(argv[0] == "/opt/conda/bin/python");
  BOOST_TEST(argv[1] == "-u");
  BOOST_TEST(argv[2] == "-c");
  BOOST_TEST(argv[3].find("import sys, debugpy") != std::string::npos);
  BOOST_TEST(argv[4] == "5678");
}

BOOST_AUTO_TEST_CASE(check_runs_for_real) {
  // /usr/bin/python3 has python3-debugpy here; -S hides site-packages, so debugpy is missing.
  // The port: one nothing listens on (bound, not listening, while the check runs).
  const int port = ferry::test::free_loopback_port();
  for (auto [interpreter, want] : {std::pair<Argv, int>{{"/usr/bin/python3"}, 0}, {{"/usr/bin/python3", "-S", "-I"}, 1}}) {
    ferry::remote::ChildProcess child;
    auto spawned = child.spawn(debugpy_check_argv(interpreter, port));
    BOOST_REQUIRE(spawned);
    ::close(spawned->stdin_fd);
    char buffer[256];
    std::string out;
    for (ssize_t n; (n = ::read(spawned->stdout_fd, buffer, sizeof buffer)) > 0;) out.append(buffer, n);
    ::close(spawned->stdout_fd);
    auto status = child.wait_for(10s);
    BOOST_REQUIRE(status);
    BOOST_TEST(WEXITSTATUS(*status) == want);
    if (want == 0) BOOST_TEST(out.starts_with("1."), out);  // debugpy's version
  }
}

BOOST_AUTO_TEST_CASE(install_advice_names_pip_and_apt_for_the_system_python) {
  const auto system = debugpy_install_advice("/usr/bin/python3");
  BOOST_TEST(system.find("/usr/bin/python3 -m pip install debugpy") != std::string::npos, system);
  BOOST_TEST(system.find("apt install python3-debugpy") != std::string::npos, system);
  const auto bare = debugpy_install_advice("python3");
  BOOST_TEST(bare.find("python3 -m pip install debugpy") != std::string::npos);
  BOOST_TEST(bare.find("if python3 is the system's /usr/bin/python3") != std::string::npos, bare);
  const auto conda = debugpy_install_advice("/opt/conda/bin/python -u");
  BOOST_TEST(conda.find("/opt/conda/bin/python -u -m pip install debugpy") != std::string::npos, conda);
  BOOST_TEST(conda.find("apt") == std::string::npos, conda);
  BOOST_TEST(is_system_python("/usr/bin/python3 -u"));
  BOOST_TEST(!is_system_python("/home/u/venv/bin/python"));
}

BOOST_AUTO_TEST_CASE(debuggee_runs_under_debugpy_waiting_for_the_client) {
  auto argv = debuggee_argv({"python3"}, 5678, {"train.py", "--epochs", "3"});
  BOOST_REQUIRE(argv);
  BOOST_TEST((*argv == Argv{"python3", "-m", "debugpy", "--listen", "127.0.0.1:5678", "--wait-for-client", "train.py",
                            "--epochs", "3"}));
  auto module = debuggee_argv({"python3", "-u"}, 6000, {"-m", "pkg.main"});
  BOOST_REQUIRE(module);
  BOOST_TEST(module->back() == "pkg.main");
  BOOST_TEST((*module)[1] == "-u");
  BOOST_TEST(!debuggee_argv({"python3"}, 5678, {}));
  BOOST_TEST(!debuggee_argv({"python3"}, 5678, {"-m"}));
  auto option = debuggee_argv({"python3"}, 5678, {"-X", "dev", "a.py"});
  BOOST_REQUIRE(!option);
  BOOST_TEST(option.error().find("interpreter option") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(pycharm_line_is_ready_to_paste) {
  BOOST_TEST(pycharm_settrace_line(12345) ==
             "import pydevd_pycharm; pydevd_pycharm.settrace('localhost', port=12345, stdoutToServer=True, "
             "stderrToServer=True, suspend=False)");
}

BOOST_AUTO_TEST_CASE(ports_are_validated) {
  BOOST_TEST(validate_port(5678, "--port").value() == 5678);
  BOOST_TEST(!validate_port(0, "--port"));
  auto big = validate_port(70000, "--pycharm");
  BOOST_REQUIRE(!big);
  BOOST_TEST(big.error().find("--pycharm") != std::string::npos);
}

namespace {
int probe(int port, int seconds) {
  ferry::remote::ChildProcess child;
  auto spawned = child.spawn(listen_probe_argv({"/usr/bin/python3"}, port, std::chrono::seconds(seconds)));
  BOOST_REQUIRE(spawned);
  ::close(spawned->stdin_fd);
  ::close(spawned->stdout_fd);
  auto status = child.wait_for(15s);
  BOOST_REQUIRE(status);
  return WEXITSTATUS(*status);
}
}  // namespace

BOOST_AUTO_TEST_CASE(listen_probe_sees_a_listener_and_gives_up_without_one) {
  const int idle = ferry::test::free_loopback_port();
  BOOST_TEST(probe(idle, 0) == 1);

  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  BOOST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  BOOST_REQUIRE(::listen(fd, 1) == 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  BOOST_TEST(probe(ntohs(addr.sin_port), 10) == 0);
  ::close(fd);
}
