// Starting a child process the way ferry's helper starts all of them, on POSIX and on Windows alike,
// through Boost.Process (process.cpp): an argument vector (never a shell), PATH searched when
// asked, a working directory, stdin/stdout/stderr each inherited, the null device or a pipe; the
// child in a group of its own, so the terminal's Ctrl-C is ferry's to interpret and a timeout can
// end the child with everything it started:
//   POSIX    a process group led by the child (setpgid before exec); SIGPIPE back to its default
//            (the helper ignores it) and no signal blocked; the group killed by SIGKILL.
//   Windows  a new console process group (CREATE_NEW_PROCESS_GROUP: Ctrl-C is not delivered to
//            it) and a job object that holds the child from its first instruction and whatever it
//            starts; the job terminated. Only the three standard handles are inherited.
// The agent (remote-runtime/, Linux only, no Boost) keeps its own posix_spawn calls.
#pragma once

#include <chrono>
#include <cstddef>
#include <expected>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ferry::platform {

#ifdef _WIN32
using NativePipe = void*;  // a HANDLE; nullptr when none
inline constexpr NativePipe kNoPipe = nullptr;
#else
using NativePipe = int;  // a file descriptor; -1 when none
inline constexpr NativePipe kNoPipe = -1;
#endif

// The parent's end of a pipe to a child, owned: closed when destroyed. POSIX: a close-on-exec fd
// (poll it, read(2) and write(2) it as any other). Windows: a HANDLE of an anonymous pipe, not
// inheritable, for blocking ReadFile/WriteFile.
class PipeEnd {
 public:
  PipeEnd() = default;
  explicit PipeEnd(NativePipe p) : p_(p) {}
  ~PipeEnd() { reset(); }
  PipeEnd(PipeEnd&& o) noexcept : p_(o.release()) {}
  PipeEnd& operator=(PipeEnd&& o) noexcept;
  PipeEnd(const PipeEnd&) = delete;
  PipeEnd& operator=(const PipeEnd&) = delete;

  NativePipe get() const { return p_; }
  NativePipe release() {
    NativePipe p = p_;
    p_ = kNoPipe;
    return p;
  }
  void reset();
  explicit operator bool() const { return p_ != kNoPipe; }

  // Blocking: the bytes read (0 at the end of the pipe) or written; -1 on an error.
  std::ptrdiff_t read(void* buf, std::size_t n) const;
  std::ptrdiff_t write(const void* buf, std::size_t n) const;

 private:
  NativePipe p_ = kNoPipe;
};

// Where one of the child's standard streams goes.
enum class Stdio {
  inherit,  // ours
  null,     // /dev/null, NUL
  pipe,     // a new pipe whose other end the parent gets (Process::in, out, err)
};

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] names the program; UTF-8 throughout
  // argv[0] without a directory part is looked up on PATH (on Windows with PATHEXT's extensions,
  // ".exe" and the like), as execvp does; otherwise argv[0] is the program's path.
  bool search_path = false;
  std::filesystem::path cwd;  // the child's working directory; empty: ours
  Stdio in = Stdio::null;
  Stdio out = Stdio::inherit;
  Stdio err = Stdio::inherit;
};

// How a child ended. `native` is the wait(2) status on POSIX, the exit code on Windows.
struct ExitStatus {
  int native = 0;

  bool exited() const;  // it ended by itself, with code()
  int code() const;     // its exit code; 128 + the signal when a signal killed it, as shells say
  int signal() const;   // the signal that killed it; 0 if none (always on Windows)
  // "exited with status 3", "killed by signal 9 (Killed)".
  std::string describe() const;
};

// A started child, reaped exactly once however many threads ask for its status. Destroying one
// still running kills it (the child alone, SIGKILL or TerminateProcess) and reaps it.
class Process {
 public:
  // Starts spec.argv (see the top of this file). The error says why it could not start:
  // "cannot start 'prog': No such file or directory" and the like.
  static std::expected<Process, std::string> start(const ProcessSpec& spec);

  Process();
  ~Process();
  Process(Process&&) noexcept;
  Process& operator=(Process&&) noexcept;

  // The parent's ends of the pipes the spec asked for (empty for the other streams): the child's
  // stdin (write to it), stdout and stderr (read them). Take them with std::move.
  PipeEnd in, out, err;

  // The process id; -1 for a Process that holds no child.
  long id() const;
  // Its status once it has ended, waiting at most `timeout` (0: just asking).
  std::optional<ExitStatus> wait_for(std::chrono::milliseconds timeout);
  ExitStatus wait();
  bool reaped();
  // POSIX: `signal` to the child alone. Windows has no signals: the child is terminated.
  void signal(int signal);
  // The child and all it started (its process group, its job) killed at once; nothing once the
  // child has been reaped.
  void kill_group();

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// What run_captured collected.
struct Captured {
  std::string out;
  std::string err;
  // How the child ended; empty when it ran past the timeout and was killed with its group.
  std::optional<ExitStatus> status;
};

// Starts `spec` with stdout and stderr on pipes (stdin as the spec says) and reads both to their
// ends, keeping the first `err_limit` bytes of stderr, then reaps the child. Past `timeout` (until
// both pipes end: a grandchild holding them open counts) the child's group is killed and
// `status` is empty. The error says why it could not start.
std::expected<Captured, std::string> run_captured(ProcessSpec spec, std::chrono::milliseconds timeout,
                                                  std::size_t err_limit = std::numeric_limits<std::size_t>::max());

}  // namespace ferry::platform
