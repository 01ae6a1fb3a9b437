// bench/rpc driver: spawns a JSON-RPC server on pipes (`ferry serve`, or the Node peer), sends
// `initialize`, then measures ferry/ping round trips two ways: strictly sequential (one in
// flight) and pipelined (a window of requests in flight). Prints requests/s and p50/p99
// latency as one JSON line per mode on stdout.
//   rpc_bench --label NAME --requests N --window W -- COMMAND ARGS...
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/framing.hpp"

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Child {
  pid_t pid = -1;
  int in = -1;   // we write
  int out = -1;  // we read
};

Child spawn(const std::vector<std::string>& cmd) {
  int a[2], b[2];
  if (pipe(a) != 0 || pipe(b) != 0) throw std::runtime_error("pipe");
  Child c;
  c.pid = fork();
  if (c.pid == 0) {
    dup2(a[0], 0);
    dup2(b[1], 1);
    close(a[0]), close(a[1]), close(b[0]), close(b[1]);
    std::vector<char*> argv;
    for (auto& s : cmd) argv.push_back(const_cast<char*>(s.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  close(a[0]);
  close(b[1]);
  c.in = a[1];
  c.out = b[0];
  return c;
}

void write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t n = write(fd, s.data(), s.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("write failed");
    }
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

class Reader {
 public:
  explicit Reader(int fd) : fd_(fd) {}
  // Next response body; throws at EOF.
  std::string next() {
    for (;;) {
      if (auto f = d_.next()) {
        if (!f->has_value()) throw std::runtime_error("bad frame from server");
        return std::move(**f);
      }
      ssize_t n = read(fd_, buf_, sizeof buf_);
      if (n <= 0) throw std::runtime_error("server closed its output");
      d_.feed(std::string_view(buf_, static_cast<std::size_t>(n)));
    }
  }

 private:
  int fd_;
  ferry::protocol::FrameDecoder d_;
  char buf_[1 << 16];
};

std::string ping(std::int64_t id) {
  std::string body = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":"ferry/ping","params":{}})";
  return ferry::protocol::encode_frame(body);
}

// Ids are numbers; the responses are read without a full parse on the hot path.
std::int64_t id_of(const std::string& body) {
  auto p = body.find("\"id\":");
  if (p == std::string::npos) throw std::runtime_error("response without id: " + body);
  if (body.find("\"error\"") != std::string::npos) throw std::runtime_error("error response: " + body);
  return std::stoll(body.substr(p + 5));
}

struct Result {
  double seconds = 0;
  std::vector<double> latency_us;
};

json summary(const std::string& label, const std::string& mode, std::size_t window, Result r) {
  std::sort(r.latency_us.begin(), r.latency_us.end());
  auto pct = [&](double q) { return r.latency_us[static_cast<std::size_t>(q * (r.latency_us.size() - 1))]; };
  return {{"server", label},
          {"mode", mode},
          {"window", window},
          {"requests", r.latency_us.size()},
          {"requests_per_s", r.latency_us.size() / r.seconds},
          {"p50_us", pct(0.50)},
          {"p99_us", pct(0.99)}};
}

Result run_sequential(Child& c, Reader& reader, std::int64_t& next_id, std::size_t n) {
  Result r;
  r.latency_us.reserve(n);
  auto t0 = Clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    auto s = Clock::now();
    write_all(c.in, ping(next_id++));
    id_of(reader.next());
    r.latency_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count());
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

Result run_pipelined(Child& c, Reader& reader, std::int64_t& next_id, std::size_t n, std::size_t window) {
  Result r;
  std::int64_t base = next_id;
  std::vector<Clock::time_point> sent(n);
  r.latency_us.assign(n, 0);
  std::mutex m;
  std::condition_variable cv;
  std::size_t completed = 0;
  auto t0 = Clock::now();
  std::thread writer([&] {
    std::size_t i = 0;
    std::string batch;
    while (i < n) {
      std::size_t room;
      {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return i - completed < window; });
        room = window - (i - completed);
      }
      batch.clear();
      auto now = Clock::now();
      for (std::size_t k = 0; k < room && i < n; ++k, ++i) {
        sent[i] = now;
        batch += ping(base + static_cast<std::int64_t>(i));
      }
      write_all(c.in, batch);
    }
  });
  for (std::size_t k = 0; k < n; ++k) {
    auto id = id_of(reader.next());
    auto idx = static_cast<std::size_t>(id - base);
    if (idx >= n) throw std::runtime_error("unexpected id");
    r.latency_us[idx] = std::chrono::duration<double, std::micro>(Clock::now() - sent[idx]).count();
    {
      std::lock_guard lock(m);
      ++completed;
    }
    cv.notify_one();
  }
  writer.join();
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  next_id = base + static_cast<std::int64_t>(n);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);
  std::string label = "server";
  std::size_t requests = 200000, window = 256, sequential = 20000;
  std::vector<std::string> cmd;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      for (++i; i < argc; ++i) cmd.emplace_back(argv[i]);
      break;
    }
    if (i + 1 >= argc) break;
    if (a == "--label") label = argv[++i];
    else if (a == "--requests") requests = std::stoul(argv[++i]);
    else if (a == "--window") window = std::stoul(argv[++i]);
    else if (a == "--sequential") sequential = std::stoul(argv[++i]);
  }
  if (cmd.empty()) {
    std::cerr << "usage: rpc_bench [--label L] [--requests N] [--window W] [--sequential N] -- COMMAND...\n";
    return 2;
  }
  Child c = spawn(cmd);
  try {
    Reader reader(c.out);
    write_all(c.in, ferry::protocol::encode_frame(
                        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"processId":null,"capabilities":{}}})"));
    reader.next();
    write_all(c.in, ferry::protocol::encode_frame(R"({"jsonrpc":"2.0","method":"initialized","params":{}})"));
    std::int64_t next_id = 1;
    run_pipelined(c, reader, next_id, std::min<std::size_t>(requests, 20000), window);  // warm-up
    auto seq = run_sequential(c, reader, next_id, sequential);
    auto pipe = run_pipelined(c, reader, next_id, requests, window);
    std::cout << summary(label, "sequential", 1, seq).dump() << "\n"
              << summary(label, "pipelined", window, pipe).dump() << std::endl;
    write_all(c.in, ferry::protocol::encode_frame(R"({"jsonrpc":"2.0","id":"bye","method":"shutdown"})"));
    reader.next();
    write_all(c.in, ferry::protocol::encode_frame(R"({"jsonrpc":"2.0","method":"exit"})"));
  } catch (const std::exception& e) {
    std::cerr << "rpc_bench (" << label << "): " << e.what() << "\n";
    kill(c.pid, SIGKILL);
    waitpid(c.pid, nullptr, 0);
    return 1;
  }
  close(c.in);
  int st = 0;
  waitpid(c.pid, &st, 0);
  return 0;
}
