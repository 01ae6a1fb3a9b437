// bench/sync_vs_rsync: ferry's sync against rsync (and `tar | zstd | ssh`) over the same
// loopback sshd (tests/integration's fixture), same key, same trees on /dev/shm. Prints one
// markdown table of times, bytes and ferry/peer ratios. Sizes come from the environment:
//   FERRY_BENCH_DIR (/dev/shm/ferry-sync-bench)  trees and remote copies; the big trees are
//                                                 built once and kept between runs
//   FERRY_BENCH_SMALL (20000) FERRY_BENCH_BIG_MB (256)   initial sync
//   FERRY_BENCH_NOOP (100000)                            no-op resync
//   FERRY_BENCH_SAVE_TREE (10000) FERRY_BENCH_SAVES (50) save latency through `ferry serve`
//                                                        (sync/fileSaved, and the editor path:
//                                                        LSP didSave from a plain client)
//   FERRY_BENCH_EDIT_MB (1024)                           1-byte edit and 1 MiB insertion
//   FERRY_BENCH_ONLY (all)   comma list of parts to run: initial, noop, daemon, save, editor, edit
//   FERRY_BENCH_RUNS (1)     initial syncs per tool, alternated (ferry, rsync, tar, ferry, ...),
//                            and each edit and pull as many times; the table shows medians
//   FERRY_BENCH_WARM_MEMORY (1)  0: no memory warm-up before each big-file transfer
//                            (bench/common/warm_memory.hpp)
//   FERRY_BIN, FERRY_AGENT: the binaries under test
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/common/text_tree.hpp"
#include "bench/common/warm_memory.hpp"
#include "tests/integration/sshd_fixture.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::uint64_t env_num(const char* name, std::uint64_t def) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : def;
}
std::string env_str(const char* name, std::string def) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : def;
}

std::string q(const std::string& s) {  // shell single quotes
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct Timed {
  double seconds;
  std::string out;
};
Timed timed(const std::string& cmd) {
  auto t0 = Clock::now();
  std::string out = ferry::test::run_command(cmd);
  return {std::chrono::duration<double>(Clock::now() - t0).count(), out};
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}
double median(std::vector<double> v) { return percentile(std::move(v), 0.5); }

using ferry::bench::make_small_tree;
using ferry::bench::write_file;

// Moves mtime to a later whole second, so rsync's quick check (whole seconds) sees every edit.
void bump_mtime(const fs::path& p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  timespec t[2] = {{0, UTIME_OMIT}, {st.st_mtim.tv_sec + 2, 0}};
  ::utimensat(AT_FDCWD, p.c_str(), t, 0);
}

struct Env {
  ferry::test::SshdFixture* sshd;
  std::string ferry;
  std::string rsh;  // ssh -F <fixture config>
  std::string alias;

  void project(const fs::path& dir, const std::string& remote) const {
    write_file(dir / "ferry.json", json{{"name", dir.filename().string()},
                                        {"host", alias},
                                        {"sshConfig", sshd->ssh_config().string()},
                                        {"mappings", {{{"local", "."}, {"remote", remote}}}}}
                                       .dump());
  }
  // `ferry sync --json` in the project: seconds and the summary.
  std::pair<double, json> ferry_sync(const fs::path& dir) const {
    auto r = timed(fmt::format("{} --project {} sync --json --yes", q(ferry), q(dir.string())));
    return {r.seconds, json::parse(r.out.substr(r.out.rfind('{')))};
  }
  Timed rsync(const fs::path& src, const std::string& dest, const std::string& extra = "") const {
    return timed(fmt::format("rsync -a {} --exclude=/.ferry -e {} {}/ {}:{}/", extra, q(rsh), q(src.string()), alias, q(dest)));
  }
};

std::uint64_t rsync_wire(const std::string& stats) {
  auto field = [&](const char* name) -> std::uint64_t {
    auto at = stats.find(name);
    if (at == std::string::npos) return 0;
    std::string digits;
    for (auto i = at + std::strlen(name); i < stats.size() && stats[i] != '\n'; ++i)
      if (std::isdigit(static_cast<unsigned char>(stats[i]))) digits += stats[i];
    return digits.empty() ? 0 : std::stoull(digits);
  };
  return field("Total bytes sent:") + field("Total bytes received:");
}

// A minimal LSP-framed JSON-RPC client for `ferry serve` on pipes.
class Serve {
 public:
  Serve(const std::string& ferry, const fs::path& cwd) {
    int in[2], out[2];
    if (::pipe(in) != 0 || ::pipe(out) != 0) throw std::runtime_error("pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, in[1]);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
    std::vector<std::string> argv{ferry, "serve"};
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    if (posix_spawn(&pid_, ferry.c_str(), &fa, nullptr, args.data(), environ) != 0) throw std::runtime_error("spawn serve");
    posix_spawn_file_actions_destroy(&fa);
    ::close(in[0]);
    ::close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~Serve() {
    ::close(to_);
    int st;
    auto deadline = Clock::now() + std::chrono::seconds(5);
    while (::waitpid(pid_, &st, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &st, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::close(from_);
  }
  void send(const json& msg) {
    std::string body = msg.dump();
    std::string frame = "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    for (std::size_t off = 0; off < frame.size();) {
      ssize_t n = ::write(to_, frame.data() + off, frame.size() - off);
      if (n <= 0) throw std::runtime_error("serve: write failed");
      off += static_cast<std::size_t>(n);
    }
  }
  json call(const std::string& method, const json& params, std::chrono::seconds timeout) {
    int id = next_id_++;
    send({{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}});
    auto deadline = Clock::now() + timeout;
    while (true) {
      json m = read(deadline);
      if (m.contains("method") && m.contains("id")) {  // a request to the client: accept it
        send({{"jsonrpc", "2.0"}, {"id", m["id"]}, {"result", nullptr}});
        continue;
      }
      if (m.contains("id") && m["id"] == id) return m;
    }
  }
  void notify(const std::string& method, const json& params) {
    send({{"jsonrpc", "2.0"}, {"method", method}, {"params", params}});
  }
  // Replies to any client-bound request waiting in the pipe, without blocking.
  void drain() {
    while (true) {
      pollfd p{from_, POLLIN, 0};
      if (buf_.find("\r\n\r\n") == std::string::npos && ::poll(&p, 1, 0) <= 0) return;
      json m = read(Clock::now() + std::chrono::seconds(5));
      if (m.contains("method") && m.contains("id")) send({{"jsonrpc", "2.0"}, {"id", m["id"]}, {"result", nullptr}});
    }
  }

 private:
  json read(Clock::time_point deadline) {
    while (true) {
      auto hdr = buf_.find("\r\n\r\n");
      if (hdr != std::string::npos) {
        auto cl = buf_.find("Content-Length:");
        std::size_t len = std::stoul(buf_.substr(cl + 15, hdr - cl - 15));
        if (buf_.size() >= hdr + 4 + len) {
          json m = json::parse(buf_.substr(hdr + 4, len));
          buf_.erase(0, hdr + 4 + len);
          return m;
        }
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) throw std::runtime_error("serve: no reply in time");
      pollfd p{from_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char chunk[65536];
      ssize_t n = ::read(from_, chunk, sizeof chunk);
      if (n <= 0) throw std::runtime_error("serve: exited");
      buf_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
  int next_id_ = 1;
  std::string buf_;
};

struct Row {
  std::string what, ferry, peer, ratio, target;
};

std::string secs(double s) { return s < 1 ? fmt::format("{:.1f} ms", s * 1000) : fmt::format("{:.2f} s", s); }
std::string bytes(std::uint64_t n) {
  return n < 10240 ? fmt::format("{} B", n) : n < (10u << 20) ? fmt::format("{:.1f} KiB", n / 1024.0) : fmt::format("{:.1f} MiB", n / 1048576.0);
}

}  // namespace

int main() {
  const fs::path dir = env_str("FERRY_BENCH_DIR", "/dev/shm/ferry-sync-bench");
  const std::uint64_t n_small = env_num("FERRY_BENCH_SMALL", 20000), big_mb = env_num("FERRY_BENCH_BIG_MB", 256);
  const std::uint64_t n_noop = env_num("FERRY_BENCH_NOOP", 100000);
  const std::uint64_t n_save_tree = env_num("FERRY_BENCH_SAVE_TREE", 10000), n_saves = env_num("FERRY_BENCH_SAVES", 50);
  const std::uint64_t edit_mb = env_num("FERRY_BENCH_EDIT_MB", 1024);
  fs::create_directories(dir / "tmp");
  ::setenv("TMPDIR", (dir / "tmp").c_str(), 1);  // the fixture, and so the remote home, on /dev/shm
  ::unsetenv("SSH_AUTH_SOCK");
  // Every `ferry sync` here makes its own link unless a row says otherwise (the daemon's rows).
  ::setenv("FERRY_NO_DAEMON", "1", 1);
  Env env;
  env.ferry = env_str("FERRY_BIN", "");
  if (env.ferry.empty() || !std::getenv("FERRY_AGENT")) {
    std::cerr << "sync_bench: set FERRY_BIN and FERRY_AGENT (bench/sync_vs_rsync/run.sh does)\n";
    return 2;
  }
  ferry::test::SshdOptions sshd_options;
  sshd_options.log_level = "INFO";  // each login logged: the editor part counts them
  ferry::test::SshdFixture sshd(sshd_options);
  sshd.trust_host_key();
  env.sshd = &sshd;
  env.rsh = "ssh -F " + sshd.ssh_config().string();
  env.alias = sshd.alias();
  const fs::path remote = dir / "remote";  // absolute remote paths: outlive the fixture
  fs::create_directories(remote);         // any part may run first (FERRY_BENCH_ONLY)
  std::vector<Row> rows;
  auto log = [](const std::string& s) { std::cerr << "sync_bench: " << s << std::endl; };
  const std::string only = env_str("FERRY_BENCH_ONLY", "");
  auto part = [&](const std::string& name) {
    return only.empty() || ("," + only + ",").find("," + name + ",") != std::string::npos;
  };
  const std::uint64_t runs = std::max<std::uint64_t>(1, env_num("FERRY_BENCH_RUNS", 1));

  // 1. Initial sync: small files plus one big file, into empty destinations.
  if (part("initial")) {
    const fs::path tree = dir / fmt::format("init-{}-{}", n_small, big_mb);
    if (!fs::exists(tree / ".built")) {
      log("building " + tree.string());
      fs::remove_all(tree);
      make_small_tree(tree, n_small, 4096, 1);
      ferry::bench::make_big_text_file(tree / "big.bin", big_mb << 20, 2);
      write_file(tree / ".built", "");
    }
    env.project(tree, (remote / "init-ferry").string());
    auto clear = [&] {
      fs::remove_all(remote / "init-ferry");
      fs::remove_all(remote / "init-rsync");
      fs::remove_all(remote / "init-tar");
      fs::remove_all(tree / ".ferry");
      fs::create_directories(remote);
    };
    std::vector<double> f, r, t;
    for (std::uint64_t i = 0; i < runs; ++i) {
      log(fmt::format("initial sync {}/{}", i + 1, runs));
      clear();
      auto [tf, sf] = env.ferry_sync(tree);
      if (!sf.value("errors", json::array()).empty() || sf.value("filesSent", std::uint64_t{0}) < n_small + 1)
        log("warning: ferry: " + sf.dump().substr(0, 300));
      f.push_back(tf);
      r.push_back(env.rsync(tree, (remote / "init-rsync").string()).seconds);
      t.push_back(timed(fmt::format("tar -C {} --exclude=./.ferry -cf - . | zstd -q -T0 | {} {} {}", q(tree.string()), env.rsh,
                                    env.alias, q(fmt::format("mkdir -p {0} && zstd -dq | tar -C {0} -xf -", (remote / "init-tar").string()))))
                      .seconds);
      log(fmt::format("  ferry {:.2f} s, rsync {:.2f} s, tar {:.2f} s", tf, r.back(), t.back()));
    }
    const std::string of = runs > 1 ? fmt::format(" (median of {})", runs) : "";
    const double tf = median(f), tr = median(r), tt = median(t);
    rows.push_back({fmt::format("initial: {} files + {} MiB{}", n_small, big_mb, of), secs(tf), "rsync " + secs(tr),
                    fmt::format("{:.2f}x", tf / tr), ""});
    rows.push_back({"initial, vs tar + zstd + ssh" + of, secs(tf), "tar+zstd+ssh " + secs(tt), fmt::format("{:.2f}x", tf / tt), "<= 1x"});
    clear();
  }

  // 2. No-op resync of a large tree (built and first synced once, kept between runs).
  if (part("noop")) {
    const fs::path tree = dir / fmt::format("noop-{}", n_noop);
    if (!fs::exists(tree / ".built")) {
      log("building " + tree.string());
      fs::remove_all(tree);
      make_small_tree(tree, n_noop, 256, 3);
      write_file(tree / ".built", "");
    }
    env.project(tree, (remote / fmt::format("noop-{}-ferry", n_noop)).string());
    log("no-op: first syncs (once)");
    env.ferry_sync(tree);
    env.rsync(tree, (remote / fmt::format("noop-{}-rsync", n_noop)).string());
    std::vector<double> f, r;
    for (int i = 0; i < 3; ++i) {
      auto [t, s] = env.ferry_sync(tree);
      if (s.value("filesSent", 1) != 0) log("warning: the no-op ferry sync sent files");
      f.push_back(t);
      r.push_back(env.rsync(tree, (remote / fmt::format("noop-{}-rsync", n_noop)).string()).seconds);
    }
    rows.push_back({fmt::format("no-op resync, {} files (`ferry sync`: process, connect, load, walk; median of 3)", n_noop),
                    secs(median(f)), "rsync " + secs(median(r)), fmt::format("{:.3f}x", median(f) / median(r)), "<= 0.1x"});
    // The same through `ferry serve` (what the IDE does): connected, manifest and index in memory.
    std::vector<double> w, t;
    {
      Serve serve(env.ferry, tree);
      serve.call("initialize", {{"capabilities", json::object()}}, std::chrono::seconds(30));
      serve.notify("initialized", json::object());
      serve.call("sync/push", json::object(), std::chrono::seconds(300));
      for (int i = 0; i < 3; ++i) {
        auto t0 = Clock::now();
        json rep = serve.call("sync/push", json::object(), std::chrono::seconds(300));
        w.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        if (!rep.contains("result") || rep["result"].value("filesSent", 1) != 0) log("warning: serve no-op: " + rep.dump().substr(0, 200));
      }
      // A terminal's `ferry sync` while that server is live: it rides the server (project socket;
      // FERRY_NO_DAEMON would keep it off the socket).
      ::unsetenv("FERRY_NO_DAEMON");
      for (int i = 0; i < 3; ++i) {
        auto [secs_taken, s] = env.ferry_sync(tree);
        if (s.value("filesSent", 1) != 0) log("warning: the terminal's no-op sent files");
        t.push_back(secs_taken);
      }
      ::setenv("FERRY_NO_DAEMON", "1", 1);
      serve.call("shutdown", nullptr, std::chrono::seconds(30));
      serve.notify("exit", nullptr);
    }
    rows.push_back({fmt::format("no-op resync, {} files (`sync/push` in `ferry serve`, median of 3)", n_noop), secs(median(w)),
                    "rsync " + secs(median(r)), fmt::format("{:.3f}x", median(w) / median(r)), "<= 0.1x"});
    rows.push_back({fmt::format("no-op resync, {} files (a terminal's `ferry sync` riding that `ferry serve`: process, socket, "
                                "its warm index; median of 3)", n_noop),
                    secs(median(t)), "rsync " + secs(median(r)), fmt::format("{:.3f}x", median(t) / median(r)), "<= 0.05x"});
  }

  // 2b. No editor: the first `ferry sync` leaves a daemon (docs/sync.md) and the next ride it: a
  // no-op of the large tree, and one saved file against rsync over an ssh ControlMaster socket.
  if (part("daemon")) {
    const fs::path tree = dir / fmt::format("noop-{}", n_noop);
    if (!fs::exists(tree / ".built")) {
      fs::remove_all(tree);
      make_small_tree(tree, n_noop, 256, 3);
      write_file(tree / ".built", "");
    }
    const std::string rdir = (remote / fmt::format("noop-{}-ferry", n_noop)).string();
    env.project(tree, rdir);
    env.ferry_sync(tree);  // alone, before any daemon
    std::vector<double> alone, r;
    for (int i = 0; i < 3; ++i) {
      alone.push_back(env.ferry_sync(tree).first);
      r.push_back(env.rsync(tree, (remote / fmt::format("noop-{}-rsync", n_noop)).string()).seconds);
    }
    ::unsetenv("FERRY_NO_DAEMON");
    env.ferry_sync(tree);  // links by itself, leaves the daemon
    const std::string status = fmt::format("{} --project {} daemon status --json", q(env.ferry), q(tree.string()));
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (json::parse(ferry::test::run_command(status), nullptr, false).value("linked", false) == false) {
      if (Clock::now() > deadline) throw std::runtime_error("no daemon linked within 120 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::vector<double> warm;
    for (int i = 0; i < 3; ++i) {
      auto [t, sum] = env.ferry_sync(tree);
      if (sum.value("filesSent", 1) != 0) log("warning: the no-op riding the daemon sent files");
      warm.push_back(t);
    }
    rows.push_back({fmt::format("no-op resync, {} files (`ferry sync` riding the daemon the first one left; median of 3)", n_noop),
                    secs(median(warm)), "rsync " + secs(median(r)), fmt::format("{:.3f}x", median(warm) / median(r)), "<= 0.05x"});
    rows.push_back({fmt::format("no-op resync, {} files (`ferry sync` alone, FERRY_NO_DAEMON=1; median of 3)", n_noop),
                    secs(median(alone)), "rsync " + secs(median(r)), fmt::format("{:.3f}x", median(alone) / median(r)), ""});
    // One saved file: `ferry sync FILE` through the daemon, `rsync FILE` through a ControlMaster.
    const std::string control = (dir / "tmp" / "cm.sock").string();
    const std::string cm_rsh = fmt::format("{} -o ControlPath={}", env.rsh, control);
    ferry::test::run_command(fmt::format("{} -o ControlMaster=yes -o ControlPersist=300 -fN {}", cm_rsh, env.alias));
    const fs::path file = tree / "d000/s00/f0.py";
    std::vector<double> mine, theirs;
    for (int i = 0; i < 5; ++i) {
      write_file(file, fmt::format("x = {}\n", std::string(static_cast<std::size_t>(i + 1), '7')));
      mine.push_back(timed(fmt::format("{} --project {} sync {}", q(env.ferry), q(tree.string()), q(file.string()))).seconds);
      theirs.push_back(timed(fmt::format("rsync -a -e {} {} {}:{}", q(cm_rsh), q(file.string()), env.alias,
                                         q((remote / fmt::format("noop-{}-rsync", n_noop) / "d000/s00/f0.py").string())))
                           .seconds);
    }
    ferry::test::run_command(fmt::format("{} -O exit {} 2>&1", cm_rsh, env.alias));
    ferry::test::run_command(fmt::format("{} --project {} daemon stop", q(env.ferry), q(tree.string())));
    ::setenv("FERRY_NO_DAEMON", "1", 1);
    rows.push_back({"one saved file (`ferry sync FILE` riding the daemon; median of 5)", secs(median(mine)),
                    "rsync over a ControlMaster " + secs(median(theirs)), fmt::format("{:.2f}x", median(mine) / median(theirs)),
                    "<= 0.1x"});
  }

  // 3. Save latency: sync/fileSaved through `ferry serve` until the remote file is replaced,
  // against one single-file rsync per save (each edit changes the size: rsync sees it). Then the
  // editor path: a plain LSP client (rootUri, no ferry capability) saving with
  // textDocument/didSave, and the SSH logins its whole session made (sync, saves, a command, a
  // tunnel), counted in sshd's own log.
  auto saves = [&](const std::string& name, bool editor, std::vector<double>& f, std::vector<double>& r) {
    const fs::path tree = dir / fmt::format("save-{}", n_save_tree);
    if (!fs::exists(tree / ".built")) {
      fs::remove_all(tree);
      make_small_tree(tree, n_save_tree, 2048, 4);
      write_file(tree / ".built", "");
    }
    const fs::path dest = remote / fmt::format("{}-{}-ferry", name, n_save_tree);
    const fs::path rdest = remote / fmt::format("{}-{}-rsync", name, n_save_tree);
    env.project(tree, dest.string());
    env.rsync(tree, rdest.string());
    log(name + " latency");
    const int logins_before = sshd.accepted_logins();
    int rsync_logins = 0;  // the peer's, made meanwhile
    Serve serve(env.ferry, editor ? dir : tree);  // the editor finds the project from rootUri, not the cwd
    json init{{"capabilities", editor ? json::object() : json{{"experimental", {{"ferry", true}}}}}};
    if (editor) init["rootUri"] = "file://" + tree.string();
    serve.call("initialize", init, std::chrono::seconds(30));
    serve.notify("initialized", json::object());
    json first = editor ? serve.call("workspace/executeCommand", {{"command", "ferry.sync"}}, std::chrono::seconds(300))
                        : serve.call("sync/push", json::object(), std::chrono::seconds(300));
    if (!first.contains("result")) throw std::runtime_error(name + ": first sync: " + first.dump());
    for (std::uint64_t i = 0; i < n_saves; ++i) {
      const std::string rel = fmt::format("d{:03}/s{:02}/f{}.py", i % 100, (i / 100) % 10, i);
      std::string content;
      {
        std::ifstream in(tree / rel, std::ios::binary);
        content.assign(std::istreambuf_iterator<char>(in), {});
      }
      content += fmt::format("# {} {}\n", name, i);
      write_file(tree / rel, content);
      auto t0 = Clock::now();
      if (editor) serve.notify("textDocument/didSave", {{"textDocument", {{"uri", "file://" + (tree / rel).string()}}}});
      else serve.notify("sync/fileSaved", {{"path", (tree / rel).string()}});
      const auto deadline = t0 + std::chrono::seconds(10);
      struct stat st {};
      while (!(::stat((dest / rel).c_str(), &st) == 0 && static_cast<std::size_t>(st.st_size) == content.size())) {
        if (Clock::now() > deadline) throw std::runtime_error("save of " + rel + " never reached the remote");
        std::this_thread::sleep_for(std::chrono::microseconds(50));  // a bench: polling the remote file is the measurement
      }
      f.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      serve.drain();
      const int before_rsync = sshd.accepted_logins();
      r.push_back(timed(fmt::format("rsync -a -e {} {} {}:{}", q(env.rsh), q((tree / rel).string()), env.alias,
                                    q((rdest / rel).string())))
                      .seconds);
      rsync_logins += sshd.accepted_logins() - before_rsync;
    }
    if (editor) {
      // What else an editor session does on the same link: the box's GPUs, a tunnel.
      serve.call("workspace/executeCommand", {{"command", "ferry.gpu"}}, std::chrono::seconds(30));
      serve.call("workspace/executeCommand", {{"command", "ferry.tunnel"}, {"arguments", {"0:localhost:9"}}},
                 std::chrono::seconds(30));
    }
    serve.call("shutdown", nullptr, std::chrono::seconds(30));
    serve.notify("exit", nullptr);
    return sshd.accepted_logins() - logins_before - rsync_logins;
  };
  if (part("save")) {
    std::vector<double> f, r;
    saves("save", false, f, r);
    rows.push_back({fmt::format("save latency p50, {} saves in a {}-file tree", n_saves, n_save_tree), secs(percentile(f, 0.5)),
                    "rsync " + secs(percentile(r, 0.5)), fmt::format("{:.3f}x", percentile(f, 0.5) / percentile(r, 0.5)), ""});
    rows.push_back({"save latency p95", secs(percentile(f, 0.95)), "rsync " + secs(percentile(r, 0.95)),
                    fmt::format("{:.3f}x", percentile(f, 0.95) / percentile(r, 0.95)), "ferry <= 20 ms"});
  }
  if (part("editor")) {
    std::vector<double> f, r;
    const int logins = saves("editor", true, f, r);
    rows.push_back({fmt::format("editor path (textDocument/didSave -> file on the box) p50, {} saves", n_saves),
                    secs(percentile(f, 0.5)), "rsync " + secs(percentile(r, 0.5)),
                    fmt::format("{:.3f}x", percentile(f, 0.5) / percentile(r, 0.5)), ""});
    rows.push_back({"editor path p95", secs(percentile(f, 0.95)), "rsync " + secs(percentile(r, 0.95)),
                    fmt::format("{:.3f}x", percentile(f, 0.95) / percentile(r, 0.95)), "ferry <= 20 ms"});
    rows.push_back({"SSH logins of that editor session (sync, saves, ferry.gpu, ferry.tunnel)", std::to_string(logins),
                    fmt::format("rsync {} (one per save)", n_saves),
                    fmt::format("{:.3f}x", static_cast<double>(logins) / static_cast<double>(n_saves)), "1"});
  }

  // 4. A 1-byte edit in a large file, then 5. 1 MiB inserted at its start.
  if (part("edit")) {
    const fs::path tree = dir / fmt::format("edit-{}", edit_mb);
    const fs::path file = tree / "model.bin";
    if (!fs::exists(tree / ".built")) {
      log("building " + tree.string());
      fs::remove_all(tree);
      fs::create_directories(tree);
      ferry::bench::make_big_text_file(file, edit_mb << 20, 5);
      write_file(tree / ".built", "");
    }
    const fs::path rdest = remote / fmt::format("edit-{}-rsync", edit_mb);
    env.project(tree, (remote / fmt::format("edit-{}-ferry", edit_mb)).string());
    log("large file: first syncs (once)");
    env.ferry_sync(tree);
    env.rsync(tree, rdest.string());
    // Each change made `runs` times (ferry, then rsync), the table showing medians: one ~2 s
    // run here varies by half its time.
    const std::string of = runs > 1 ? fmt::format(" (median of {})", runs) : "";
    // Both tools write a whole new copy of the file: each starts on memory the VM backs already.
    const bool warm = env_num("FERRY_BENCH_WARM_MEMORY", 1) != 0;
    const auto warm_up = [&] {
      if (!warm) return;
      const std::uint64_t n = (edit_mb << 20) + (edit_mb << 20) / 4;
      log(fmt::format("warm-up of {} MiB: {:.2f} s", n >> 20, ferry::bench::warm_memory(dir, n)));
    };
    auto edit = [&](const std::string& what, const std::function<void(std::uint64_t)>& change) {
      std::vector<double> f, r;
      std::uint64_t fw = 0, rw = 0;
      for (std::uint64_t run = 0; run < runs; ++run) {
        change(run);
        bump_mtime(file);
        log(what);
        warm_up();
        auto [tf, sf] = env.ferry_sync(tree);
        warm_up();
        auto tr = env.rsync(tree, rdest.string(), "--stats");
        fw = sf.value("bytesOnWire", std::uint64_t{0});
        rw = rsync_wire(tr.out);
        f.push_back(tf);
        r.push_back(tr.seconds);
        log(fmt::format("{}: ferry {:.3f} s, rsync {:.3f} s", what, tf, tr.seconds));  // a median hides which run was slow
      }
      rows.push_back({what + " (bytes on the wire)", bytes(fw), "rsync " + bytes(rw), fmt::format("{:.3f}x", double(fw) / double(rw)),
                      what.starts_with("1-byte") ? "ferry <= 64 KiB" : ""});
      rows.push_back({what + " (time" + of + ")", secs(median(f)), "rsync " + secs(median(r)),
                      fmt::format("{:.2f}x", median(f) / median(r)), ""});
    };
    edit(fmt::format("1-byte edit in {} MiB", edit_mb), [&](std::uint64_t run) {
      const auto at = static_cast<std::streamoff>((edit_mb << 20) / 2 + 12345 + run * 4099);
      std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
      io.seekg(at);
      char c = 0;
      io.read(&c, 1);
      c = static_cast<char>(c ^ 0x20);
      io.seekp(at);
      io.write(&c, 1);
    });
    edit(fmt::format("1 MiB inserted at the start of {} MiB", edit_mb), [&](std::uint64_t) {
      const fs::path tmp = tree / "model.bin.tmp";
      {
        std::mt19937_64 rng(static_cast<unsigned>(::time(nullptr)));
        std::string head(1u << 20, '\0');
        ferry::bench::fill_text(head, rng);
        std::ofstream out(tmp, std::ios::binary);
        out << head;
        std::ifstream in(file, std::ios::binary);
        out << in.rdbuf();
      }
      fs::rename(tmp, file);
    });
    // 6. Pull: one byte changes in ferry's remote copy; `ferry pull` against rsync fetching the
    // rsync copy (now one byte off the local file) in the other direction.
    {
      const std::string what = fmt::format("pull: 1-byte remote change in {} MiB", edit_mb);
      const fs::path pulled = remote / fmt::format("edit-{}-ferry", edit_mb) / "model.bin";
      std::vector<double> f, r;
      std::uint64_t fw = 0, rw = 0;
      const std::string pull = fmt::format("{} --project {} pull model.bin --json", q(env.ferry), q(tree.string()));
      const auto flip = [&](std::streamoff at) {
        std::fstream io(pulled, std::ios::in | std::ios::out | std::ios::binary);
        io.seekg(at);
        char c = 0;
        io.read(&c, 1);
        c = static_cast<char>(c ^ 0x20);
        io.seekp(at);
        io.write(&c, 1);
        io.close();
        bump_mtime(pulled);
      };
      for (std::uint64_t run = 0; run < runs; ++run) {
        const auto at = static_cast<std::streamoff>((edit_mb << 20) / 3 + run * 4099);
        if (run > 0) {
          // rsync put the local file back as it was: so is ferry's copy, and an untimed pull
          // (which finds the two equal) brings ferry's record back in line.
          flip(static_cast<std::streamoff>((edit_mb << 20) / 3 + (run - 1) * 4099));
          timed(pull);
        }
        flip(at);
        log(what);
        warm_up();
        auto rf = timed(pull);
        const json sf = json::parse(rf.out.substr(rf.out.rfind('{')));
        warm_up();
        auto tr = timed(fmt::format("rsync -a --stats -e {} {}:{} {}", q(env.rsh), env.alias, q((rdest / "model.bin").string()),
                                    q(file.string())));
        fw = sf.value("bytesOnWire", std::uint64_t{0});
        rw = rsync_wire(tr.out);
        f.push_back(rf.seconds);
        r.push_back(tr.seconds);
        log(fmt::format("{}: ferry {:.3f} s, rsync {:.3f} s", what, rf.seconds, tr.seconds));
      }
      rows.push_back({what + " (bytes on the wire)", bytes(fw), "rsync " + bytes(rw), fmt::format("{:.3f}x", double(fw) / double(rw)),
                      "ferry <= 64 KiB"});
      rows.push_back({what + " (time" + of + ")", secs(median(f)), "rsync " + secs(median(r)),
                      fmt::format("{:.2f}x", median(f) / median(r)), ""});
    }
  }

  std::cout << "| measurement | ferry | peer | ferry/peer | target |\n|---|---|---|---|---|\n";
  for (const auto& r : rows) std::cout << "| " << r.what << " | " << r.ferry << " | " << r.peer << " | " << r.ratio << " | " << r.target << " |\n";
  return 0;
}
