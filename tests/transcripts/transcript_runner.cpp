// Runs one transcript (tests/transcripts/*.jsonl) against the real `ferry serve`: writes the
// frames it lists to the server's stdin and checks each message read back from stdout against
// the expected shape, then the exit status. Format: one JSON object per line ('#' comments):
//   {"args": [...], "serve_args": [...], "env": {...}}
//                              (first line only) `ferry ARGS serve SERVE_ARGS` with ENV set
//   {"send": VALUE}            VALUE framed as a JSON body
//   {"send_text": "..."}       the string framed as a body as-is (for invalid JSON)
//   {"raw": "..."}             bytes written as-is (headers, partial frames)
//   {"pad": N}                 N bytes of 'x' written as-is (oversize bodies)
//   {"expect": VALUE}          the next message must match VALUE (objects: subset; arrays:
//                              same length, element-wise; "*" matches any value; a string
//                              starting with "~" matches any string containing the rest; "=NAME"
//                              matches any value and remembers it as NAME, or must equal it
//                              if NAME is remembered already)
//   {"expect_unordered": [V...]}  the next messages, as many as listed, match the Vs in some
//                              order (a response racing a notification)
//   {"answer": {"result": R}}  answers the server's own request last matched by "expect" (a
//                              message with method and id) with R, or {"error": E}, under its id
//   {"close": true}            closes the server's stdin
//   {"expect_eof": true}       the server closes its output, stdin still open, within the deadline
//   {"expect_exit": N}         the server exits with N and wrote nothing more
// In "send", a string "=NAME" is replaced by the value remembered as NAME (a run's id).
// The first line may also hold "copy": [[FROM, TO], ...]: directories copied before the server
// starts (a project the test may sync, kept out of the source tree).
// ${TRANSCRIPT_DIR} in a line becomes the transcript's directory, ${TRANSCRIPT_TMP} a fresh
// temporary directory removed afterwards.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/framing.hpp"
#include "tests/support/wire_schema.hpp"

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
constexpr auto kDeadline = std::chrono::seconds(20);

struct Failure {
  std::string what;
};

[[noreturn]] void fail(const std::string& what) { throw Failure{what}; }

class ServerProcess {
 public:
  ServerProcess(const std::string& binary, const std::vector<std::string>& args, const json& env) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) fail("pipe failed");
    pid_ = fork();
    if (pid_ < 0) fail("fork failed");
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      close(in[0]);
      close(in[1]);
      close(out[0]);
      close(out[1]);
      for (auto it = env.begin(); it != env.end(); ++it) setenv(it.key().c_str(), it.value().get<std::string>().c_str(), 1);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(binary.c_str()));
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    stdin_ = in[1];
    stdout_ = out[0];
  }

  ~ServerProcess() {
    if (stdin_ >= 0) close(stdin_);
    if (pid_ > 0 && !exit_status_) {
      kill(pid_, SIGKILL);
      int st = 0;
      waitpid(pid_, &st, 0);
    }
    if (stdout_ >= 0) close(stdout_);
  }

  void write_bytes(std::string_view bytes) {
    if (stdin_ < 0) fail("write after close");
    while (!bytes.empty()) {
      ssize_t n = ::write(stdin_, bytes.data(), bytes.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        // The server closed its input (one that ends the stream on purpose may do so before
        // the transcript's later sends, under load): the expect lines judge what it did.
        if (errno == EPIPE) return;
        fail(std::string("writing to the server failed: ") + std::strerror(errno));
      }
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  void close_stdin() {
    if (stdin_ >= 0) close(stdin_);
    stdin_ = -1;
  }

  // The next message, or nullopt at EOF. Fails after the deadline.
  std::optional<json> next_message() {
    auto deadline = Clock::now() + kDeadline;
    for (;;) {
      if (auto f = decoder_.next()) {
        if (!f->has_value()) fail("server wrote a bad frame: " + f->error().message);
        try {
          return json::parse(**f);
        } catch (const std::exception& e) {
          fail("server wrote invalid JSON: " + **f);
        }
      }
      if (eof_) {
        if (decoder_.mid_frame()) fail("server output ends mid-frame");
        return std::nullopt;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) fail("timed out waiting for the server");
      pollfd p{stdout_, POLLIN, 0};
      int r = poll(&p, 1, static_cast<int>(left));
      if (r < 0 && errno != EINTR) fail("poll failed");
      if (r <= 0) continue;
      char buf[65536];
      ssize_t n = ::read(stdout_, buf, sizeof buf);
      if (n < 0 && errno != EINTR) fail("read failed");
      if (n == 0) eof_ = true;
      if (n > 0) decoder_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    }
  }

  // Reads stdout to EOF (any message left is a failure), then reaps the server. The server
  // closes stdout only when it exits, so the blocking waitpid is short; ctest's TIMEOUT
  // bounds a server that would hang after that.
  int wait_exit() {
    while (auto m = next_message()) fail("unexpected message before exit: " + m->dump());
    int st = 0;
    while (waitpid(pid_, &st, 0) < 0)
      if (errno != EINTR) fail("waitpid failed");
    exit_status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return *exit_status_;
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
  bool eof_ = false;
  std::optional<int> exit_status_;
  ferry::protocol::FrameDecoder decoder_;
};

// Values remembered by "=NAME" in an expectation.
std::map<std::string, json>& remembered() {
  static std::map<std::string, json> values;
  return values;
}

// `v` with every string "=NAME" replaced by the remembered value.
json substitute(const json& v) {
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s.size() > 1 && s[0] == '=') {
      auto it = remembered().find(s.substr(1));
      if (it == remembered().end()) fail("send uses " + s + " before an expectation remembered it");
      return it->second;
    }
    return v;
  }
  json out = v;
  if (v.is_object() || v.is_array())
    for (auto it = out.begin(); it != out.end(); ++it) *it = substitute(*it);
  return out;
}

bool matches(const json& expected, const json& actual, const std::string& path, std::string& why) {
  if (expected.is_string()) {
    const auto& s = expected.get_ref<const std::string&>();
    if (s == "*") return true;
    if (s.size() > 1 && s[0] == '=') {
      auto [it, added] = remembered().emplace(s.substr(1), actual);
      if (added || it->second == actual) return true;
      why = path + ": expected " + s + " (" + it->second.dump() + "), got " + actual.dump();
      return false;
    }
    if (!s.empty() && s[0] == '~') {
      if (actual.is_string() && actual.get_ref<const std::string&>().find(s.substr(1)) != std::string::npos)
        return true;
      why = path + ": expected a string containing '" + s.substr(1) + "', got " + actual.dump();
      return false;
    }
  }
  if (expected.is_object()) {
    if (!actual.is_object()) {
      why = path + ": expected an object, got " + actual.dump();
      return false;
    }
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      auto a = actual.find(it.key());
      if (a == actual.end()) {
        why = path + "/" + it.key() + ": missing";
        return false;
      }
      if (!matches(it.value(), *a, path + "/" + it.key(), why)) return false;
    }
    return true;
  }
  if (expected.is_array()) {
    if (!actual.is_array() || actual.size() != expected.size()) {
      why = path + ": expected an array of " + std::to_string(expected.size()) + ", got " + actual.dump();
      return false;
    }
    for (std::size_t i = 0; i < expected.size(); ++i)
      if (!matches(expected[i], actual[i], path + "/" + std::to_string(i), why)) return false;
    return true;
  }
  if (expected != actual) {
    why = path + ": expected " + expected.dump() + ", got " + actual.dump();
    return false;
  }
  return true;
}

std::string frame(const std::string& body) { return ferry::protocol::encode_frame(body); }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: transcript_runner FERRY_BINARY TRANSCRIPT\n";
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  std::filesystem::path transcript = argv[2];
  std::string dir = std::filesystem::absolute(transcript).parent_path().string();
  std::string tmp_template = (std::filesystem::temp_directory_path() / "ferry-transcript-XXXXXX").string();
  if (!mkdtemp(tmp_template.data())) {
    std::cerr << "mkdtemp failed\n";
    return 2;
  }
  struct RemoveTmp {
    std::string path;
    ~RemoveTmp() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  } remove_tmp{tmp_template};
  std::ifstream in(transcript);
  if (!in) {
    std::cerr << "cannot read " << transcript << "\n";
    return 2;
  }
  std::vector<std::pair<int, json>> steps;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    for (std::size_t p; (p = line.find("${TRANSCRIPT_DIR}")) != std::string::npos;)
      line.replace(p, std::strlen("${TRANSCRIPT_DIR}"), dir);
    for (std::size_t p; (p = line.find("${TRANSCRIPT_TMP}")) != std::string::npos;)
      line.replace(p, std::strlen("${TRANSCRIPT_TMP}"), tmp_template);
    try {
      steps.emplace_back(n, json::parse(line));
    } catch (const std::exception& e) {
      std::cerr << transcript << ":" << n << ": not JSON: " << e.what() << "\n";
      return 2;
    }
  }

  std::vector<std::string> args{"--log-level", "info"};
  std::size_t first = 0;
  json setup = json::object();
  if (!steps.empty() && (steps[0].second.contains("args") || steps[0].second.contains("serve_args") ||
                         steps[0].second.contains("env") || steps[0].second.contains("copy"))) {
    setup = steps[0].second;
    first = 1;
  }
  for (const auto& c : setup.value("copy", json::array())) {
    std::error_code ec;
    std::filesystem::copy(c.at(0).get<std::string>(), c.at(1).get<std::string>(),
                          std::filesystem::copy_options::recursive, ec);
    if (ec) {
      std::cerr << transcript << ": copy " << c.dump() << ": " << ec.message() << "\n";
      return 2;
    }
  }
  for (const auto& a : setup.value("args", json::array())) args.push_back(a.get<std::string>());
  args.push_back("serve");
  for (const auto& a : setup.value("serve_args", json::array())) args.push_back(a.get<std::string>());
  int line_no = 0;
  try {
    ServerProcess server(argv[1], args, setup.value("env", json::object()));
    bool exited = false;
    json server_request_id;  // the server -> client request awaiting an "answer"
    // What each request sent asked (method, command): its response is held to the wire schema.
    std::map<std::string, std::pair<std::string, std::string>> asked;
    auto read = [&]() -> std::optional<json> {
      auto m = server.next_message();
      if (!m) return m;
      std::pair<std::string, std::string> what;
      if (!m->contains("method") && m->contains("id")) {
        if (auto it = asked.find((*m)["id"].dump()); it != asked.end()) what = it->second;
      }
      try {
        ferry::test::WireSchema::instance().check_message(*m, what.first, what.second);
      } catch (const std::exception& e) {
        fail(e.what());
      }
      return m;
    };
    for (std::size_t i = first; i < steps.size(); ++i) {
      line_no = steps[i].first;
      const json& s = steps[i].second;
      if (s.contains("send")) {
        const json sent = substitute(s["send"]);
        if (sent.is_object() && sent.contains("id") && sent.contains("method") && sent["method"].is_string()) {
          const json& params = sent.value("params", json::object());
          const std::string command = sent["method"] == "workspace/executeCommand" && params.is_object() &&
                                              params.contains("command") && params["command"].is_string()
                                          ? params["command"].get<std::string>() : "";
          asked[sent["id"].dump()] = {sent["method"].get<std::string>(), command};
        }
        server.write_bytes(frame(sent.dump()));
      } else if (s.contains("send_text")) {
        server.write_bytes(frame(s["send_text"].get<std::string>()));
      } else if (s.contains("raw")) {
        server.write_bytes(s["raw"].get<std::string>());
      } else if (s.contains("pad")) {
        server.write_bytes(std::string(s["pad"].get<std::size_t>(), 'x'));
      } else if (s.contains("expect")) {
        auto m = read();
        if (!m) fail("expected " + s["expect"].dump() + " but the server closed its output");
        std::string why;
        if (!matches(s["expect"], *m, "", why)) fail("mismatch " + why + "\n  got: " + m->dump());
        if (m->contains("method") && m->contains("id")) server_request_id = (*m)["id"];
      } else if (s.contains("expect_unordered")) {
        std::vector<json> left(s["expect_unordered"].begin(), s["expect_unordered"].end());
        while (!left.empty()) {
          auto m = read();
          if (!m) fail("expected one of " + json(left).dump() + " but the server closed its output");
          // A "=NAME" in an alternative that does not match must not stay remembered.
          auto saved = remembered();
          auto it = std::find_if(left.begin(), left.end(), [&](const json& e) {
            std::string why;
            if (matches(e, *m, "", why)) return true;
            remembered() = saved;
            return false;
          });
          if (it == left.end()) fail("none of " + json(left).dump() + " matches\n  got: " + m->dump());
          left.erase(it);
        }
      } else if (s.contains("answer")) {
        if (server_request_id.is_null()) fail("answer before any server request was expected");
        json reply = s["answer"];
        reply["jsonrpc"] = "2.0";
        reply["id"] = server_request_id;
        server.write_bytes(frame(reply.dump()));
        server_request_id = nullptr;
      } else if (s.contains("expect_eof")) {
        if (auto m = read()) fail("expected the server to close its output, got " + m->dump());
      } else if (s.contains("close")) {
        server.close_stdin();
      } else if (s.contains("expect_exit")) {
        server.close_stdin();
        int code = server.wait_exit();
        if (code != s["expect_exit"].get<int>())
          fail("exit status " + std::to_string(code) + ", expected " + s["expect_exit"].dump());
        exited = true;
      } else {
        fail("unknown step " + s.dump());
      }
    }
    if (!exited) fail("a transcript must end with expect_exit");
  } catch (const Failure& f) {
    std::cerr << transcript.string() << ":" << line_no << ": " << f.what << "\n";
    return 1;
  }
  std::cout << transcript.filename().string() << ": ok (" << steps.size() << " steps)\n";
  return 0;
}
