// The child test_process starts (common/process.hpp), built for POSIX and Windows alike:
//   process_helper print OUT ERR CODE    OUT to stdout, ERR to stderr, exit with CODE
//   process_helper words W...            each word as [W] on stdout, as the program received it
//   process_helper cwd                   its working directory (UTF-8)
//   process_helper cat                   stdin to stdout until its end
//   process_helper sleep SECONDS
//   process_helper grandchild PIDFILE    starts `process_helper sleep 60` plainly (it shares our
//                                        group or job, and our stdout), writes its pid to PIDFILE,
//                                        then sleeps 60 s itself
//   process_helper signals               POSIX: "pipe=default|other blocked=N group=leader|other"
#ifdef _WIN32
#include <fcntl.h>
#include <io.h>
#include <windows.h>
#include <shellapi.h>
#else
#include <signal.h>
#include <spawn.h>
#include <unistd.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#ifndef _WIN32
extern char** environ;
#endif

namespace {

#ifdef _WIN32
std::string narrow(const wchar_t* w) {
  const int n = ::WideCharToMultiByte(CP_UTF8, 0, w, -1, nullptr, 0, nullptr, nullptr);
  std::string s(static_cast<std::size_t>(n > 0 ? n - 1 : 0), '\0');
  if (n > 1) ::WideCharToMultiByte(CP_UTF8, 0, w, -1, s.data(), n, nullptr, nullptr);
  return s;
}

// The words as Windows' own parser splits the command line we were given.
std::vector<std::string> words() {
  int n = 0;
  wchar_t** w = ::CommandLineToArgvW(::GetCommandLineW(), &n);
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(narrow(w[i]));
  ::LocalFree(w);
  return out;
}

long start_grandchild() {
  wchar_t self[MAX_PATH];
  ::GetModuleFileNameW(nullptr, self, MAX_PATH);
  std::wstring line = L"\"" + std::wstring(self) + L"\" sleep 60";
  STARTUPINFOW si{};
  si.cb = sizeof si;
  si.dwFlags = STARTF_USESTDHANDLES;
  si.hStdInput = ::GetStdHandle(STD_INPUT_HANDLE);
  si.hStdOutput = ::GetStdHandle(STD_OUTPUT_HANDLE);
  si.hStdError = ::GetStdHandle(STD_ERROR_HANDLE);
  PROCESS_INFORMATION pi{};
  if (!::CreateProcessW(self, line.data(), nullptr, nullptr, TRUE, 0, nullptr, nullptr, &si, &pi)) return -1;
  ::CloseHandle(pi.hThread);
  ::CloseHandle(pi.hProcess);
  return static_cast<long>(pi.dwProcessId);
}
#else
std::vector<std::string> words(int argc, char** argv) { return {argv, argv + argc}; }

long start_grandchild(const char* self) {
  char sleep_word[] = "sleep", sixty[] = "60";
  char* args[] = {const_cast<char*>(self), sleep_word, sixty, nullptr};
  pid_t pid = -1;
  return ::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, args, environ) == 0 ? pid : -1;
}
#endif

}  // namespace

int main(int argc, char** argv) {
#ifdef _WIN32
  const std::vector<std::string> args = words();
  (void)argc;
  (void)argv;
  ::_setmode(::_fileno(stdout), _O_BINARY);  // what is written is what the test reads
  ::_setmode(::_fileno(stdin), _O_BINARY);
#else
  const std::vector<std::string> args = words(argc, argv);
#endif
  if (args.size() < 2) return 2;
  const std::string& mode = args[1];
  if (mode == "print" && args.size() == 5) {
    std::cout << args[2] << std::flush;
    std::cerr << args[3] << std::flush;
    return std::atoi(args[4].c_str());
  }
  if (mode == "words") {
    for (std::size_t i = 2; i < args.size(); ++i) std::cout << '[' << args[i] << ']';
    return 0;
  }
  if (mode == "cwd") {
    const auto u8 = std::filesystem::current_path().u8string();
    std::cout << std::string(u8.begin(), u8.end());
    return 0;
  }
  if (mode == "cat") {
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, stdin)) > 0) std::fwrite(buf, 1, n, stdout);
    return 0;
  }
  if (mode == "sleep" && args.size() == 3) {
    std::this_thread::sleep_for(std::chrono::seconds(std::atoi(args[2].c_str())));
    return 0;
  }
  if (mode == "grandchild" && args.size() == 3) {
#ifdef _WIN32
    const long pid = start_grandchild();
#else
    const long pid = start_grandchild(argv[0]);
#endif
    std::ofstream(std::filesystem::path(std::u8string(args[2].begin(), args[2].end()))) << pid << "\n";
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return 0;
  }
#ifndef _WIN32
  if (mode == "signals") {
    struct sigaction pipe {};
    ::sigaction(SIGPIPE, nullptr, &pipe);
    sigset_t blocked;
    ::sigprocmask(SIG_BLOCK, nullptr, &blocked);
    int n = 0;
    for (int s = 1; s < NSIG; ++s) n += sigismember(&blocked, s) == 1;
    std::cout << "pipe=" << (pipe.sa_handler == SIG_DFL ? "default" : "other") << " blocked=" << n
              << " group=" << (::getpgrp() == ::getpid() ? "leader" : "other");
    return 0;
  }
#endif
  return 2;
}
