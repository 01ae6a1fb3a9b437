// The remote commands of `ferry debug` (pure: argv in, argv out): the debugpy import check and
// its install advice, the debuggee under `python -m debugpy`, the probe that waits for debugpy's
// listener, and PyCharm's settrace line.
#pragma once

#include <chrono>
#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::debug {

inline constexpr int kDefaultDebugpyPort = 5678;

// How `ferry debug`'s line on stderr starts once debugpy listens and the tunnel is open: what an
// IDE task waits for before attaching (the VS Code tasks `ferry ide vscode` writes match it).
inline constexpr const char* kReadyLinePrefix = "debugpy waits on the box's ";

// ferry.json's interpreter may carry arguments ("/opt/conda/bin/python -u"): split into words by
// protocol::interpreter_words (quotes honoured, no shell). Empty, blank or naming a shell: an
// error naming the field.
std::expected<std::vector<std::string>, std::string> interpreter_argv(std::string_view interpreter);

// Each command below comes twice: its interpreter arguments (`-c ...`, `-m debugpy ...`, for a
// run through the agent, which puts ferry.json's interpreter in front) and the whole argv.

// `<interpreter> -c "import debugpy ..." PORT`: exits 0 and prints debugpy's version when it is
// importable and nothing listens on PORT yet; exits 3 ("port in use" on stderr) when something does.
inline constexpr int kDebugPortInUse = 3;
std::vector<std::string> debugpy_check_args(int port);
std::vector<std::string> debugpy_check_argv(const std::vector<std::string>& interpreter, int port);

// What to tell the user when the check fails: how to install debugpy for that interpreter
// (pip always; apt's python3-debugpy as well when it is the system python).
std::string debugpy_install_advice(std::string_view interpreter);

// True for the distribution's own python (/usr/bin/python3, /bin/python3, /usr/bin/python);
// a bare "python3" resolved on PATH counts too, since on a stock box that is the system one.
bool is_system_python(std::string_view interpreter);

// `<interpreter> -m debugpy --listen 127.0.0.1:PORT --wait-for-client TARGET...`. `target` is
// what the user wrote after `--`: a script and its args, or `-m module args`, or `-c code`.
std::expected<std::vector<std::string>, std::string> debuggee_args(int port, const std::vector<std::string>& target);
std::expected<std::vector<std::string>, std::string> debuggee_argv(const std::vector<std::string>& interpreter, int port,
                                                                  const std::vector<std::string>& target);

// `<interpreter> -c PROBE PORT SECONDS`: exits 0 once something listens on 127.0.0.1:PORT
// (read from /proc/net/tcp, so the probe never connects and debugpy never sees a client that
// vanishes), 1 when `timeout` passes first.
std::vector<std::string> listen_probe_args(int port, std::chrono::seconds timeout);
std::vector<std::string> listen_probe_argv(const std::vector<std::string>& interpreter, int port,
                                           std::chrono::seconds timeout);

// The line to paste into the remote code for PyCharm's debug server (the IDE listens on PORT
// here; a reverse tunnel makes the box's 127.0.0.1:PORT reach it).
std::string pycharm_settrace_line(int port);

// A port the user gave: 1..65535.
std::expected<int, std::string> validate_port(long long port, std::string_view what);

}  // namespace ferry::debug
