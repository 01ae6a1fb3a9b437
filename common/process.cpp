// The process launcher: see process.hpp. Boost.Process starts every child on both platforms: its
// executor (fork and exec with an error pipe on POSIX, CreateProcessW on Windows), the standard
// streams (bp::std_in/std_out/std_err, each always given a pipe object: our own stream's copy, the
// null device or a new pipe), the group (bp::group: a process group led by the child, a job
// object) and the PATH search (bp::search_path). What Boost.Process 1.74 leaves to us is the
// Launch handler's (bp::extend::handler) and the two platform sections below:
//   * its POSIX pipes are not close-on-exec (a launch in another thread would inherit them): the
//     pipes are made here with pipe2(O_CLOEXEC);
//   * its start_dir ignores a failed chdir, and a child that fails to start is never reaped;
//   * its POSIX waits with a timeout take over SIGCHLD for the whole process: the waits here use
//     waitpid (and a pidfd), WaitForSingleObject on Windows;
//   * its Windows command line doubles quotes and drops empty words; CommandLineToArgvW's rules
//     are applied here, to UTF-16 made from the UTF-8 words; CreateProcessW inherits only the
//     three standard handles (PROC_THREAD_ATTRIBUTE_HANDLE_LIST), not every inheritable one
//     (sockets are);
//   * its Windows group (a job) takes the child only once it runs: the child starts suspended
//     and is resumed once it is in the job, so nothing it starts escapes it.
#include "common/process.hpp"

#ifdef _WIN32
// Before Boost.Process: 1.74's detail/windows/handles.hpp names DWORD and boost::winapi's handle
// information calls without including what declares them.
#include <windows.h>

#include <boost/winapi/handle_info.hpp>
#endif
#include <boost/process/child.hpp>
#include <boost/process/exe.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/group.hpp>
#include <boost/process/io.hpp>
#include <boost/process/pipe.hpp>
#include <boost/process/search_path.hpp>

#ifndef _WIN32
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>
#include <tuple>

namespace ferry::platform {
namespace bp = boost::process;

namespace {

using Clock = std::chrono::steady_clock;

// One launch at a time in this process. POSIX: Boost.Process makes its error pipe close-on-exec
// only after pipe(2) returns; a fork in between would keep the write end, and this launch would
// wait for that other child to end. Windows: Boost.Process makes the child's ends inheritable
// until the child is created; another child created meanwhile could inherit them.
std::mutex& launch_mutex() {
  static std::mutex m;
  return m;
}

long long ms_left(Clock::time_point deadline) {
  return std::max<long long>(0, std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count());
}

std::string cannot_start(const std::string& program, const std::string& why) {
  return "cannot start '" + program + "': " + why;
}

}  // namespace

#ifdef _WIN32
// ---------------------------------------------------------------------------------------------
// Windows
namespace {

using Native = HANDLE;
const Native kNoHandle = INVALID_HANDLE_VALUE;  // what bp::pipe holds for "no end"

std::wstring widen(const std::string& s) {
  if (s.empty()) return {};
  const int n = ::MultiByteToWideChar(CP_UTF8, 0, s.data(), static_cast<int>(s.size()), nullptr, 0);
  std::wstring w(static_cast<std::size_t>(std::max(n, 0)), L'\0');
  if (n > 0) ::MultiByteToWideChar(CP_UTF8, 0, s.data(), static_cast<int>(s.size()), w.data(), n);
  return w;
}

std::string narrow(const std::wstring& w) {
  if (w.empty()) return {};
  const int n = ::WideCharToMultiByte(CP_UTF8, 0, w.data(), static_cast<int>(w.size()), nullptr, 0, nullptr, nullptr);
  std::string s(static_cast<std::size_t>(std::max(n, 0)), '\0');
  if (n > 0) ::WideCharToMultiByte(CP_UTF8, 0, w.data(), static_cast<int>(w.size()), s.data(), n, nullptr, nullptr);
  return s;
}

std::string error_text(DWORD error) {
  wchar_t* text = nullptr;
  const DWORD n = ::FormatMessageW(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
                                   nullptr, error, 0, reinterpret_cast<wchar_t*>(&text), 0, nullptr);
  std::wstring w(text ? text : L"", n);
  if (text) ::LocalFree(text);
  while (!w.empty() && (w.back() == L'\n' || w.back() == L'\r' || w.back() == L' ' || w.back() == L'.')) w.pop_back();
  return w.empty() ? "Windows error " + std::to_string(error) : narrow(w);
}

std::string error_text(const std::error_code& ec) {
  return ec.category() == std::system_category() ? error_text(static_cast<DWORD>(ec.value())) : ec.message();
}

// One word of a command line as CommandLineToArgvW (and the C runtime) splits it back: quoted when
// empty or holding blanks or quotes; backslashes doubled only before a quote.
void append_word(std::wstring& line, const std::wstring& word) {
  if (!line.empty()) line += L' ';
  if (!word.empty() && word.find_first_of(L" \t\n\v\"") == std::wstring::npos) {
    line += word;
    return;
  }
  line += L'"';
  for (auto it = word.begin();; ++it) {
    std::size_t backslashes = 0;
    for (; it != word.end() && *it == L'\\'; ++it) ++backslashes;
    if (it == word.end()) {
      line.append(backslashes * 2, L'\\');
      break;
    }
    if (*it == L'"') {
      line.append(backslashes * 2 + 1, L'\\');
    } else {
      line.append(backslashes, L'\\');
    }
    line += *it;
  }
  line += L'"';
}

// The program's word: quotes delimit it and backslashes are path separators (no escapes).
std::wstring command_line(const std::vector<std::string>& argv) {
  std::wstring line;
  const std::wstring program = widen(argv.front());
  if (program.find_first_of(L" \t") != std::wstring::npos) line = L"\"" + program + L"\"";
  else line = program;
  for (std::size_t i = 1; i < argv.size(); ++i) append_word(line, widen(argv[i]));
  return line;
}

bool has_directory(const std::string& program) { return program.find_first_of("/\\:") != std::string::npos; }

std::string path_text(const std::filesystem::path& p) { return narrow(p.wstring()); }

// The file the child runs. bp::search_path reads PATHEXT unchecked: Windows' default when unset.
std::expected<std::wstring, std::string> program_path(const ProcessSpec& spec) {
  const std::string& program = spec.argv.front();
  if (!spec.search_path || has_directory(program)) return widen(program);
  if (::GetEnvironmentVariableW(L"PATHEXT", nullptr, 0) == 0) ::SetEnvironmentVariableW(L"PATHEXT", L".COM;.EXE;.BAT;.CMD");
  const boost::filesystem::path found = bp::search_path(boost::filesystem::path(widen(program)));
  if (found.empty()) return std::unexpected(cannot_start(program, "not found on PATH"));
  return found.wstring();
}

// A copy of our standard handle `which` that the child may inherit; none when we have none.
Native copy_of_ours(DWORD which) {
  const HANDLE ours = ::GetStdHandle(which);
  HANDLE copy = nullptr;
  if (ours == nullptr || ours == INVALID_HANDLE_VALUE ||
      !::DuplicateHandle(::GetCurrentProcess(), ours, ::GetCurrentProcess(), &copy, 0, FALSE, DUPLICATE_SAME_ACCESS))
    return kNoHandle;
  return copy;
}

Native open_null(bool write) {
  return ::CreateFileW(L"NUL", write ? GENERIC_WRITE : GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, nullptr,
                       OPEN_EXISTING, 0, nullptr);
}

// The child's end of stream `which` (0 stdin, 1 stdout, 2 stderr) in a bp::pipe for bp::std_*, the
// parent's end (Stdio::pipe) in `parent`.
std::expected<void, std::string> child_end(Stdio how, int which, bp::pipe& p, PipeEnd& parent) {
  const bool child_reads = which == 0;
  if (how == Stdio::pipe) {
    HANDLE read_end = nullptr, write_end = nullptr;
    if (!::CreatePipe(&read_end, &write_end, nullptr, 0)) return std::unexpected("CreatePipe: " + error_text(::GetLastError()));
    parent = PipeEnd(child_reads ? write_end : read_end);
    p = child_reads ? bp::pipe(read_end, kNoHandle) : bp::pipe(kNoHandle, write_end);
    return {};
  }
  const Native h = how == Stdio::null ? open_null(!child_reads)
                                      : copy_of_ours(which == 0 ? STD_INPUT_HANDLE : which == 1 ? STD_OUTPUT_HANDLE : STD_ERROR_HANDLE);
  if (how == Stdio::null && h == kNoHandle) return std::unexpected("cannot open NUL: " + error_text(::GetLastError()));
  p = child_reads ? bp::pipe(h, kNoHandle) : bp::pipe(kNoHandle, h);
  return {};
}

// What Boost.Process leaves to us at the launch (see the top of this file): the command line, the
// working directory, the flags, the handle list; the child resumed once it is in the job.
struct Launch : bp::extend::handler {
  std::wstring line;
  std::wstring cwd;
  std::vector<HANDLE> inherited;
  std::vector<char> attributes;  // a PROC_THREAD_ATTRIBUTE_LIST

  Launch() = default;
  Launch(const Launch&) = delete;
  ~Launch() {
    if (!attributes.empty()) ::DeleteProcThreadAttributeList(list());
  }
  LPPROC_THREAD_ATTRIBUTE_LIST list() { return reinterpret_cast<LPPROC_THREAD_ATTRIBUTE_LIST>(attributes.data()); }

  template <class Executor>
  void on_setup(Executor& e) {
    e.cmd_line = line.c_str();
    if (!cwd.empty()) e.work_dir = cwd.c_str();
    e.creation_flags |= CREATE_NEW_PROCESS_GROUP | CREATE_SUSPENDED;
    for (HANDLE h : {e.startup_info.hStdInput, e.startup_info.hStdOutput, e.startup_info.hStdError})
      if (h && h != INVALID_HANDLE_VALUE && std::find(inherited.begin(), inherited.end(), h) == inherited.end())
        inherited.push_back(h);
    if (inherited.empty()) {
      e.inherit_handles = false;
      return;
    }
    SIZE_T size = 0;
    ::InitializeProcThreadAttributeList(nullptr, 1, 0, &size);
    attributes.resize(size);
    if (!::InitializeProcThreadAttributeList(list(), 1, 0, &size)) {
      attributes.clear();
      return e.set_error(std::error_code(static_cast<int>(::GetLastError()), std::system_category()),
                         "InitializeProcThreadAttributeList");
    }
    if (!::UpdateProcThreadAttribute(list(), 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, inherited.data(),
                                     inherited.size() * sizeof(HANDLE), nullptr, nullptr))
      return e.set_error(std::error_code(static_cast<int>(::GetLastError()), std::system_category()),
                         "UpdateProcThreadAttribute");
    e.startup_info_ex.lpAttributeList = list();
    e.set_startup_info_ex();
  }
  // After bp::group's on_success (it comes before this handler): the child is in the job.
  template <class Executor>
  void on_success(Executor& e) {
    ::ResumeThread(e.proc_info.hThread);
  }
  template <class Executor>
  void on_error(Executor& e, const std::error_code&) {
    if (e.proc_info.hProcess) ::TerminateProcess(e.proc_info.hProcess, 1);
  }
};

}  // namespace

void PipeEnd::reset() {
  if (p_ != kNoPipe && p_ != INVALID_HANDLE_VALUE) ::CloseHandle(p_);
  p_ = kNoPipe;
}

std::ptrdiff_t PipeEnd::read(void* buf, std::size_t n) const {
  DWORD got = 0;
  if (::ReadFile(p_, buf, static_cast<DWORD>(std::min<std::size_t>(n, 1u << 30)), &got, nullptr)) return got;
  return ::GetLastError() == ERROR_BROKEN_PIPE ? 0 : -1;
}

std::ptrdiff_t PipeEnd::write(const void* buf, std::size_t n) const {
  DWORD put = 0;
  if (::WriteFile(p_, buf, static_cast<DWORD>(std::min<std::size_t>(n, 1u << 30)), &put, nullptr)) return put;
  return -1;
}

bool ExitStatus::exited() const { return true; }
int ExitStatus::code() const { return native; }
int ExitStatus::signal() const { return 0; }
std::string ExitStatus::describe() const {
  const auto code = static_cast<unsigned>(native);
  if (code >= 0xC0000000u) {  // an NTSTATUS: an access violation, Ctrl-C...
    char hex[16];
    std::snprintf(hex, sizeof hex, "0x%08X", code);
    return std::string("ended with status ") + hex;
  }
  return "exited with status " + std::to_string(code);
}

#else
// ---------------------------------------------------------------------------------------------
// POSIX
namespace {

using Native = int;
constexpr Native kNoHandle = -1;

std::string error_text(const std::error_code& ec) { return ec.message(); }
std::string errno_text(const std::string& what, int e) { return what + ": " + std::strerror(e); }

bool has_directory(const std::string& program) { return program.find('/') != std::string::npos; }

std::string path_text(const std::filesystem::path& p) { return p.string(); }

std::expected<std::string, std::string> program_path(const ProcessSpec& spec) {
  const std::string& program = spec.argv.front();
  if (!spec.search_path || has_directory(program)) return program;
  const boost::filesystem::path found = bp::search_path(program);
  if (found.empty()) return std::unexpected(cannot_start(program, std::strerror(ENOENT)));
  return found.string();
}

// A close-on-exec fd above the standard three (the child's dup2 onto 0, 1 or 2 must not be a
// no-op that leaves it close-on-exec); `fd` is consumed.
int above_std(int fd) {
  if (fd < 0 || fd > 2) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  ::close(fd);
  return moved;
}

std::expected<void, std::string> child_end(Stdio how, int which, bp::pipe& p, PipeEnd& parent) {
  const bool child_reads = which == 0;
  int fd = -1;
  if (how == Stdio::pipe) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return std::unexpected(errno_text("pipe", errno));
    parent = PipeEnd(above_std(child_reads ? fds[1] : fds[0]));
    fd = above_std(child_reads ? fds[0] : fds[1]);
    if (!parent || fd < 0) return std::unexpected(errno_text("fcntl", errno));
  } else {
    // Ours, when we have it: a copy (Boost.Process closes what it is given); else /dev/null.
    if (how == Stdio::inherit) fd = ::fcntl(which, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) fd = above_std(::open("/dev/null", (child_reads ? O_RDONLY : O_WRONLY) | O_CLOEXEC));
    if (fd < 0) return std::unexpected(errno_text("/dev/null", errno));
  }
  p = child_reads ? bp::pipe(fd, kNoHandle) : bp::pipe(kNoHandle, fd);
  return {};
}

// What Boost.Process leaves to us at the launch (see the top of this file): argv[0] as given (not
// the resolved path), the working directory, the child's signal state; a child that failed to
// start, reaped.
struct Launch : bp::extend::handler {
  std::vector<char*> argv;  // null-terminated, pointing into the spec's strings
  std::string cwd;

  template <class Executor>
  void on_setup(Executor& e) {
    e.cmd_line = argv.data();
  }
  // In the child, between fork and exec: async-signal-safe calls only.
  template <class Executor>
  void on_exec_setup(Executor& e) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGPIPE, &dfl, nullptr);
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
      e.set_error(std::error_code(errno, std::system_category()), "chdir");  // written to the parent
      ::_exit(127);
    }
  }
  template <class Executor>
  void on_error(Executor& e, const std::error_code&) {
    if (e.pid <= 0) return;
    ::kill(e.pid, SIGKILL);
    while (::waitpid(e.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
};

}  // namespace

void PipeEnd::reset() {
  if (p_ >= 0) ::close(p_);
  p_ = kNoPipe;
}

std::ptrdiff_t PipeEnd::read(void* buf, std::size_t n) const {
  while (true) {
    const ssize_t got = ::read(p_, buf, n);
    if (got >= 0 || errno != EINTR) return got;
  }
}

std::ptrdiff_t PipeEnd::write(const void* buf, std::size_t n) const {
  while (true) {
    const ssize_t put = ::write(p_, buf, n);
    if (put >= 0 || errno != EINTR) return put;
  }
}

bool ExitStatus::exited() const { return WIFEXITED(native); }
int ExitStatus::code() const { return WIFEXITED(native) ? WEXITSTATUS(native) : 128 + signal(); }
int ExitStatus::signal() const { return WIFSIGNALED(native) ? WTERMSIG(native) : 0; }
std::string ExitStatus::describe() const {
  if (WIFEXITED(native)) return "exited with status " + std::to_string(WEXITSTATUS(native));
  if (WIFSIGNALED(native))
    return "killed by signal " + std::to_string(WTERMSIG(native)) + " (" + ::strsignal(WTERMSIG(native)) + ")";
  return "stopped with wait status " + std::to_string(native);
}

#endif

// ---------------------------------------------------------------------------------------------
// Both

PipeEnd& PipeEnd::operator=(PipeEnd&& o) noexcept {
  if (this != &o) {
    reset();
    p_ = o.release();
  }
  return *this;
}

// A Process holds one only once its child runs, so `pid` is always a child's: never 0 or -1,
// which kill(2), killpg(3) and waitpid(2) would take for many processes at once.
struct Process::State {
  bp::child child;
  bp::group group;
  long pid = -1;
  std::mutex mutex;  // status and the signals: nothing signals a child once reaped
  std::optional<int> status;
#ifndef _WIN32
  int pidfd = -1;  // readable once the child exits (Linux >= 5.3); else waitpid is polled
#endif

  ~State() {
#ifndef _WIN32
    if (pidfd >= 0) ::close(pidfd);
#endif
  }
};

Process::Process() = default;
Process::Process(Process&&) noexcept = default;
Process& Process::operator=(Process&&) noexcept = default;

Process::~Process() {
  if (!s_ || reaped()) return;
#ifdef _WIN32
  signal(0);
#else
  signal(SIGKILL);
#endif
  (void)wait();
}

std::expected<Process, std::string> Process::start(const ProcessSpec& spec) {
  if (spec.argv.empty() || spec.argv.front().empty()) return std::unexpected(std::string("no program to start"));
  const std::string& program = spec.argv.front();
  try {
    auto exe = program_path(spec);
    if (!exe) return std::unexpected(exe.error());
    std::error_code ec;
    if (!spec.cwd.empty() && !std::filesystem::is_directory(spec.cwd, ec))
      return std::unexpected(cannot_start(program, "no directory " + path_text(spec.cwd)));

    Process p;  // the pipes' ends below; its State only once a child runs (see State)
    Launch launch;
#ifdef _WIN32
    launch.line = command_line(spec.argv);
    launch.cwd = spec.cwd.wstring();
#else
    for (const auto& word : spec.argv) launch.argv.push_back(const_cast<char*>(word.c_str()));
    launch.argv.push_back(nullptr);
    launch.cwd = spec.cwd.string();
#endif

    std::lock_guard lock(launch_mutex());
    bp::pipe in_pipe(kNoHandle, kNoHandle), out_pipe(kNoHandle, kNoHandle), err_pipe(kNoHandle, kNoHandle);
    for (auto [how, which, pipe, parent] : {std::tuple{spec.in, 0, &in_pipe, &p.in}, std::tuple{spec.out, 1, &out_pipe, &p.out},
                                            std::tuple{spec.err, 2, &err_pipe, &p.err}}) {
      auto made = child_end(how, which, *pipe, *parent);
      if (!made) return std::unexpected(cannot_start(program, made.error()));
    }
    auto state = std::make_unique<State>();
    // The order matters: Launch's handlers run after the group's (see Launch).
    bp::child child(bp::exe = *exe, bp::std_in < in_pipe, bp::std_out > out_pipe, bp::std_err > err_pipe, state->group,
                    launch, ec);
    state->group.detach();  // its destructor would terminate the group: Process decides
    if (ec || !child.valid() || child.id() <= 0) return std::unexpected(cannot_start(program, error_text(ec)));
    child.detach();  // likewise for the child
    state->pid = child.id();
    state->child = std::move(child);
#ifndef _WIN32
    state->pidfd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(state->pid), 0));
#endif
    p.s_ = std::move(state);
    return p;
  } catch (const std::exception& e) {
    return std::unexpected(cannot_start(program, e.what()));
  }
}

long Process::id() const { return s_ ? s_->pid : -1; }

bool Process::reaped() {
  if (!s_) return true;
  std::lock_guard lock(s_->mutex);
  return s_->status.has_value();
}

std::optional<ExitStatus> Process::wait_for(std::chrono::milliseconds timeout) {
  if (!s_ || s_->pid <= 0) return std::nullopt;
  const auto deadline = Clock::now() + timeout;
#ifdef _WIN32
  {
    std::lock_guard lock(s_->mutex);
    if (s_->status) return ExitStatus{*s_->status};
  }
  const HANDLE h = s_->child.native_handle();
  const long long left = ms_left(deadline);
  if (::WaitForSingleObject(h, static_cast<DWORD>(std::min<long long>(left, INFINITE - 1))) != WAIT_OBJECT_0)
    return std::nullopt;
  DWORD code = 0;
  ::GetExitCodeProcess(h, &code);
  std::lock_guard lock(s_->mutex);
  if (!s_->status) s_->status = static_cast<int>(code);
  return ExitStatus{*s_->status};
#else
  const pid_t pid = static_cast<pid_t>(s_->pid);
  while (true) {
    {
      // waitpid and the signals share this lock, so nothing signals a pid just reaped.
      std::lock_guard lock(s_->mutex);
      if (s_->status) return ExitStatus{*s_->status};
      int status = 0;
      const pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid) {
        s_->status = status;
        return ExitStatus{status};
      }
      if (r < 0 && errno != EINTR) return std::nullopt;  // not our child any more: nothing to reap
    }
    const long long left = ms_left(deadline);
    if (left <= 0) return std::nullopt;
    if (s_->pidfd >= 0) {
      pollfd p{s_->pidfd, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1 << 30)));
    } else {
      // Kernels without pidfd: a short back-off bounded by the caller's timeout.
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<long long>(left, 5)));
    }
  }
#endif
}

ExitStatus Process::wait() {
  while (true) {
    if (auto status = wait_for(std::chrono::hours(24))) return *status;
    if (!s_ || s_->pid <= 0) return ExitStatus{};
#ifndef _WIN32
    // Not ours to reap (someone else waited for it): report it as killed rather than wait forever.
    std::lock_guard lock(s_->mutex);
    if (!s_->status && ::waitpid(static_cast<pid_t>(s_->pid), nullptr, WNOHANG) < 0 && errno == ECHILD) {
      s_->status = SIGKILL;  // the wait status of a child killed by SIGKILL
      return ExitStatus{SIGKILL};
    }
#endif
  }
}

void Process::signal(int signal) {
  if (!s_ || s_->pid <= 0) return;
  std::lock_guard lock(s_->mutex);
  if (s_->status) return;  // once reaped the pid may be someone else's
#ifdef _WIN32
  ::TerminateProcess(s_->child.native_handle(), static_cast<UINT>(128 + signal));
#else
  ::kill(static_cast<pid_t>(s_->pid), signal);
#endif
}

void Process::kill_group() {
  if (!s_ || s_->pid <= 0) return;
  std::lock_guard lock(s_->mutex);
  if (s_->status) return;  // the group's id may be someone else's (POSIX)
  std::error_code ec;
  s_->group.terminate(ec);
}

namespace {

// Reads `out` and `err` to their ends (a child blocked on a full stderr pipe would never finish its
// stdout) or until the deadline: false then.
bool drain(PipeEnd& out, PipeEnd& err, Captured& c, std::size_t err_limit, Clock::time_point deadline) {
  char buf[16384];
  auto take = [&](int k, std::size_t got) {
    if (k == 0) c.out.append(buf, got);
    else if (c.err.size() < err_limit) c.err.append(buf, std::min(got, err_limit - c.err.size()));
  };
#ifdef _WIN32
  // Anonymous pipes have no readiness to wait for: ask how much each holds, read that (it does not
  // block), and sleep a little when neither held anything.
  while (out || err) {
    bool got_any = false;
    for (int k = 0; k < 2; ++k) {
      PipeEnd& p = k == 0 ? out : err;
      if (!p) continue;
      DWORD avail = 0;
      if (!::PeekNamedPipe(p.get(), nullptr, 0, nullptr, &avail, nullptr)) {
        p.reset();  // the end of the pipe (ERROR_BROKEN_PIPE) or an error: done with it
        continue;
      }
      if (avail == 0) continue;
      const std::ptrdiff_t got = p.read(buf, std::min<std::size_t>(avail, sizeof buf));
      if (got <= 0) {
        p.reset();
        continue;
      }
      take(k, static_cast<std::size_t>(got));
      got_any = true;
    }
    if (got_any || !(out || err)) continue;
    const long long left = ms_left(deadline);
    if (left <= 0) return false;
    ::Sleep(static_cast<DWORD>(std::min<long long>(left, 5)));
  }
  return true;
#else
  while (out || err) {
    const long long left = ms_left(deadline);
    if (left <= 0) return false;
    pollfd p[2] = {{out.get(), POLLIN, 0}, {err.get(), POLLIN, 0}};
    const int n = ::poll(p, 2, static_cast<int>(std::min<long long>(left, 1 << 30)));
    if (n < 0 && errno != EINTR) return false;
    for (int k = 0; k < 2 && n > 0; ++k) {
      if (!p[k].revents) continue;
      PipeEnd& fd = k == 0 ? out : err;
      const std::ptrdiff_t got = fd.read(buf, sizeof buf);
      if (got < 0 && errno == EAGAIN) continue;
      if (got <= 0) {
        fd.reset();
        continue;
      }
      take(k, static_cast<std::size_t>(got));
    }
  }
  return true;
#endif
}

}  // namespace

std::expected<Captured, std::string> run_captured(ProcessSpec spec, std::chrono::milliseconds timeout, std::size_t err_limit) {
  spec.out = Stdio::pipe;
  spec.err = Stdio::pipe;
  auto p = Process::start(spec);
  if (!p) return std::unexpected(p.error());
  Captured c;
  const bool done = drain(p->out, p->err, c, err_limit, Clock::now() + timeout);
  if (!done) p->kill_group();
  const ExitStatus status = p->wait();
  if (done) c.status = status;
  return c;
}

}  // namespace ferry::platform
