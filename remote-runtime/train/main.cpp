// ferry-train: command-line entry. Hand-rolled argument parsing (the GPU box has no CLI11); stdout
// carries JSON-lines events only, diagnostics go to stderr.
#include <fcntl.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "remote-runtime/train/event_stream.hpp"
#include "remote-runtime/train/pack_entry.hpp"
#include "remote-runtime/train/std_compat.hpp"
#include "remote-runtime/train/train_config.hpp"
#include "remote-runtime/train/trainer.hpp"

#ifndef FERRY_TRAIN_VERSION
#define FERRY_TRAIN_VERSION "0.0.0"
#endif

extern char** environ;

namespace {

using namespace ferry::train;

constexpr const char* kUsage = R"(usage: ferry-train CONFIG.json [options]
       ferry-train pack ...          convert data to .ftensor files (see ferry-train pack --help)
       ferry-train --version | --help

options:
  --resume           continue from the newest checkpoint in the config's checkpoint dir
  --max-steps N      train N optimizer steps (overrides epochs/max_steps)
  --output DIR       output directory (overrides output_dir)
  --nproc N          run N processes on this host (c10d; process 0 is this one)
  --device D         auto | cpu | cuda | cuda:N (overrides device)
  --validate         check the config, print it normalised, and exit

events: JSON lines on stdout (start, step, eval, checkpoint, auto_batch, advice, done, error).
exit status: 0 done, 1 failure, 2 bad config or arguments, 3 done but on_complete failed,
             143 stopped by SIGTERM after a checkpoint, 130 stopped by SIGINT after a checkpoint.
)";

struct Args {
  std::string config;
  RunOptions run;
  int nproc = 1;
  bool validate = false;
};

void usage_error(const std::string& message) {
  EventStream events;
  events.emit("error", {{"stage", "arguments"}, {"message", message}});
  std::cerr << "ferry-train: " << message << "\n" << kUsage;
}

std::optional<std::int64_t> parse_positive(const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0' || n < 1) return std::nullopt;
  return n;
}

std::optional<Args> parse_args(const std::vector<std::string>& argv) {
  Args args;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const auto& a = argv[i];
    auto value = [&](const char* flag) -> std::optional<std::string> {
      if (i + 1 >= argv.size()) {
        usage_error(std::string(flag) + " needs a value");
        return std::nullopt;
      }
      return argv[++i];
    };
    if (a == "--resume") {
      args.run.resume = true;
    } else if (a == "--validate") {
      args.validate = true;
    } else if (a == "--max-steps") {
      auto v = value("--max-steps");
      if (!v) return std::nullopt;
      auto n = parse_positive(*v);
      if (!n) {
        usage_error("--max-steps must be a positive integer");
        return std::nullopt;
      }
      args.run.max_steps = *n;
    } else if (a == "--nproc") {
      auto v = value("--nproc");
      if (!v) return std::nullopt;
      auto n = parse_positive(*v);
      if (!n || *n > 1024) {
        usage_error("--nproc must be an integer in [1, 1024]");
        return std::nullopt;
      }
      args.nproc = static_cast<int>(*n);
    } else if (a == "--output") {
      auto v = value("--output");
      if (!v) return std::nullopt;
      args.run.output_dir = *v;
    } else if (a == "--device") {
      auto v = value("--device");
      if (!v) return std::nullopt;
      args.run.device = *v;
    } else if (ferry::starts_with(a, "--")) {
      usage_error("unknown option " + a);
      return std::nullopt;
    } else if (args.config.empty()) {
      args.config = a;
    } else {
      usage_error("unexpected argument " + a);
      return std::nullopt;
    }
  }
  if (args.config.empty()) {
    usage_error("missing CONFIG.json");
    return std::nullopt;
  }
  return args;
}

std::optional<int> free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  std::optional<int> port;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// --nproc: this process becomes rank 0; ranks 1..N-1 are fresh copies of the executable.
ferry::Expected<std::vector<pid_t>, std::string> spawn_local_ranks(int nproc, const std::vector<std::string>& argv) {
  auto port = free_loopback_port();
  if (!port) return ferry::Unexpected("no free loopback port for the rendezvous");
  const std::string world = std::to_string(nproc);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", std::to_string(*port).c_str(), 1);
  ::setenv("WORLD_SIZE", world.c_str(), 1);
  std::vector<std::string> child_args = {"/proc/self/exe"};
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (argv[i] == "--nproc") {
      ++i;
      continue;
    }
    child_args.push_back(argv[i]);
  }
  std::vector<char*> cargv;
  for (auto& s : child_args) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  std::vector<pid_t> pids;
  for (int rank = 1; rank < nproc; ++rank) {
    ::setenv("RANK", std::to_string(rank).c_str(), 1);
    ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // Only rank 0 speaks on stdout.
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    const int rc = ::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) return ferry::Unexpected(std::string("spawning rank ") + std::to_string(rank) + ": " + std::strerror(rc));
    pids.push_back(pid);
  }
  ::setenv("RANK", "0", 1);
  ::setenv("LOCAL_RANK", "0", 1);
  return pids;
}

// Every step frees and reallocates the same multi-megabyte activations and gradients. With glibc's
// defaults those go back to the kernel (munmap, heap trim) and come back as fresh page faults each
// step: ~4000 faults a step on the benchmark MLP, ~20% of its step time on CPU. Keep them instead.
void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory();
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? kExitBadConfig : kExitOk;
  }
  if (args[0] == "--version") {
    std::cout << "ferry-train " << FERRY_TRAIN_VERSION << " (" << build_description() << ")\n";
    return kExitOk;
  }
  if (args[0] == "pack") return run_pack_entry(std::vector<std::string>(args.begin() + 1, args.end()));

  auto parsed = parse_args(args);
  if (!parsed) return kExitBadConfig;
  EventStream events;
  auto config = load_train_config(parsed->config);
  if (!config) {
    events.emit("error", {{"stage", "config"}, {"pointer", config.error().pointer}, {"message", config.error().message},
                          {"file", parsed->config}});
    return kExitBadConfig;
  }
  if (parsed->validate) {
    events.emit("config", {{"valid", true}, {"config", to_json(*config)}});
    return kExitOk;
  }
  install_stop_handlers();
  std::vector<pid_t> children;
  if (parsed->nproc > 1) {
    auto spawned = spawn_local_ranks(parsed->nproc, args);
    if (!spawned) {
      events.emit("error", {{"stage", "distributed"}, {"message", spawned.error()}});
      return kExitFailure;
    }
    children = std::move(*spawned);
  }
  int rc = run_training(std::move(*config), parsed->run, events);
  for (const auto pid : children) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const int child_rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (child_rc != 0 && rc == kExitOk) {
      events.emit("error", {{"stage", "distributed"}, {"message", "rank process " + std::to_string(pid) + " exited with " + std::to_string(child_rc)}});
      rc = kExitFailure;
    }
  }
  return rc;
}
