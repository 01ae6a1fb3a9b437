// debugpy_command: argv for the remote side of `ferry debug`, and the advice shown around them.
#include "helper/debug/debugpy_command.hpp"

#include "protocol/shell_words.hpp"

namespace ferry::debug {

namespace {

// Polls the kernel's socket table rather than connecting: a probe connection would be taken by
// debugpy's adapter for the IDE. Runs on the box's interpreter, so it is plain Python 3.
// Python: whether anything listens on 127.0.0.1/::1/any at `port`, from the kernel's socket tables
// (connecting would be seen by debugpy as its client). Shared by the listener probe and the check.
constexpr const char* kListeningFunction =
    "def listening(port):\n"
    "    want = ':%04X' % port\n"
    "    for table in ('/proc/net/tcp', '/proc/net/tcp6'):\n"
    "        try:\n"
    "            with open(table) as f:\n"
    "                next(f)\n"
    "                for row in f:\n"
    "                    cols = row.split()\n"
    "                    if len(cols) > 3 and cols[1].endswith(want) and cols[3] == '0A':\n"
    "                        return True\n"
    "        except OSError:\n"
    "            pass\n"
    "    return False\n";

// Waits up to argv[2] seconds for a listener on argv[1]: exit 0 when one is there, 1 if not.
constexpr const char* kListenProbeMain =
    "import sys, time\n"
    "port, limit = int(sys.argv[1]), float(sys.argv[2])\n"
    "deadline = time.monotonic() + limit\n"
    "while not listening(port):\n"
    "    if time.monotonic() > deadline:\n"
    "        sys.exit(1)\n"
    "    time.sleep(0.05)\n";

std::string first_word(std::string_view s) {
  auto words = protocol::split_words(s);
  return words && !words->empty() ? words->front() : std::string();
}

}  // namespace

std::expected<std::vector<std::string>, std::string> interpreter_argv(std::string_view interpreter) {
  auto argv = protocol::interpreter_words(interpreter);
  if (!argv) return std::unexpected("ferry.json /interpreter: " + argv.error());
  return argv;
}

// debugpy importable, and its port free: with the port taken, debugpy fails to bind while a
// listener probe would find the other program's socket and point the IDE at it.
constexpr const char* kDebugpyCheckMain =
    "import sys, debugpy\n"
    "if listening(int(sys.argv[1])):\n"
    "    sys.stderr.write('port in use')\n"
    "    sys.exit(3)\n"
    "sys.stdout.write(debugpy.__version__)\n";

std::vector<std::string> debugpy_check_args(int port) {
  return {"-c", std::string(kListeningFunction) + kDebugpyCheckMain, std::to_string(port)};
}

std::vector<std::string> debugpy_check_argv(const std::vector<std::string>& interpreter, int port) {
  auto argv = interpreter;
  for (auto& a : debugpy_check_args(port)) argv.push_back(std::move(a));
  return argv;
}

bool is_system_python(std::string_view interpreter) {
  const auto exe = first_word(interpreter);
  return exe == "/usr/bin/python3" || exe == "/bin/python3" || exe == "/usr/bin/python" || exe == "python3" ||
         exe == "python";
}

std::string debugpy_install_advice(std::string_view interpreter) {
  std::string text = "debugpy is not importable by " + std::string(interpreter) + " on the remote. Install it with:\n";
  text += "  " + std::string(interpreter) + " -m pip install debugpy\n";
  if (is_system_python(interpreter)) {
    const auto exe = first_word(interpreter);
    text += "or, ";
    if (!exe.starts_with("/")) text += "if " + exe + " is the system's /usr/bin/" + exe + " (Debian, Ubuntu), ";
    else text += "as it is the system python (Debian, Ubuntu), ";
    text += "with the distribution's package:\n  sudo apt install python3-debugpy\n";
  }
  return text;
}

std::expected<std::vector<std::string>, std::string> debuggee_argv(const std::vector<std::string>& interpreter, int port,
                                                                  const std::vector<std::string>& target) {
  auto args = debuggee_args(port, target);
  if (!args) return args;
  auto argv = interpreter;
  argv.insert(argv.end(), args->begin(), args->end());
  return argv;
}

std::expected<std::vector<std::string>, std::string> debuggee_args(int port, const std::vector<std::string>& target) {
  if (target.empty()) return std::unexpected("nothing to debug: give a script after --, e.g. ferry debug -- train.py");
  if ((target[0] == "-m" || target[0] == "-c") && target.size() < 2)
    return std::unexpected(target[0] + " needs an argument (" + (target[0] == "-m" ? "a module" : "code") + ")");
  if (target[0].starts_with("-") && target[0] != "-m" && target[0] != "-c")
    return std::unexpected("debugpy runs a script, -m MODULE or -c CODE; " + target[0] +
                           " is an interpreter option: put it in ferry.json's interpreter");
  std::vector<std::string> argv = {"-m", "debugpy", "--listen"};
  argv.push_back("127.0.0.1:" + std::to_string(port));
  argv.push_back("--wait-for-client");
  argv.insert(argv.end(), target.begin(), target.end());
  return argv;
}

std::vector<std::string> listen_probe_args(int port, std::chrono::seconds timeout) {
  return {"-c", std::string(kListeningFunction) + kListenProbeMain, std::to_string(port), std::to_string(timeout.count())};
}

std::vector<std::string> listen_probe_argv(const std::vector<std::string>& interpreter, int port,
                                           std::chrono::seconds timeout) {
  auto argv = interpreter;
  for (auto& a : listen_probe_args(port, timeout)) argv.push_back(std::move(a));
  return argv;
}

std::string pycharm_settrace_line(int port) {
  return "import pydevd_pycharm; pydevd_pycharm.settrace('localhost', port=" + std::to_string(port) +
         ", stdoutToServer=True, stderrToServer=True, suspend=False)";
}

std::expected<int, std::string> validate_port(long long port, std::string_view what) {
  if (port < 1 || port > 65535)
    return std::unexpected(std::string(what) + " must be a TCP port between 1 and 65535, not " + std::to_string(port));
  return static_cast<int>(port);
}

}  // namespace ferry::debug
