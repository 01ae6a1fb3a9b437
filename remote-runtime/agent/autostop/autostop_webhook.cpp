// The autostop notice's webhook through the box's curl: see autostop_webhook.hpp.
#include "remote-runtime/agent/autostop/autostop_webhook.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "remote-runtime/train/url_redaction.hpp"

namespace ferry::agent::autostop {

using json = nlohmann::json;

namespace {

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

// Every occurrence of `what` in `text` replaced by `with`.
std::string replace_all(std::string text, const std::string& what, const std::string& with) {
  if (what.empty()) return text;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size()))
    text.replace(at, what.size(), with);
  return text;
}

// curl's stderr/stdout may echo parts of the URL: both the whole URL and its path+query go.
std::string scrub(std::string text, const std::string& url) {
  const std::string shown = webhook::redact_url(url);
  text = replace_all(std::move(text), url, shown);
  if (auto scheme = url.find("://"); scheme != std::string::npos)
    if (auto path = url.find_first_of("/?#", scheme + 3); path != std::string::npos && url.size() - path > 1)
      text = replace_all(std::move(text), url.substr(path), "/…");
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

struct CurlResult {
  int exit_code = -1;
  std::string output;  // stdout then stderr, merged
};

// Runs `curl ARGS` with `config` on its stdin; stdout and stderr come back together.
CurlResult run_curl(const std::string& curl, const std::string& config) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return {};
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]), ::close(in[1]);
    return {};
  }
  // Nothing secret in argv: `ps` on the box shows exactly this.
  const char* args[] = {"curl", "-K", "-", "--silent", "--show-error", "--output", "/dev/null", "--write-out", "%{http_code}",
                        "--max-time", "10", "--proto", "=http,https", "--header", "Content-Type: application/json",
                        "--user-agent", "ferry", nullptr};
  pid_t pid = ::fork();
  if (pid < 0) return {};
  if (pid == 0) {
    ::dup2(in[0], STDIN_FILENO);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(out[1], STDERR_FILENO);
    ::execv(curl.c_str(), const_cast<char* const*>(args));
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  // The config is small (a URL and a JSON body of a few hundred bytes): one write fits the pipe.
  std::size_t done = 0;
  while (done < config.size()) {
    auto n = ::write(in[1], config.data() + done, config.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(in[1]);
  CurlResult r;
  char buf[4096];
  while (true) {
    auto n = ::read(out[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (r.output.size() < 16384) r.output.append(buf, static_cast<std::size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace

std::expected<Webhook, std::string> webhook_from_json(const json& j) {
  if (!j.is_object() || !j.contains("url") || !j["url"].is_string())
    return std::unexpected("/webhook: expected {url, caFile?}");
  Webhook w{j["url"].get<std::string>(), {}};
  if (!w.url.starts_with("http://") && !w.url.starts_with("https://"))
    return std::unexpected("/webhook/url: " + webhook::redact_url(w.url) + " must start with http:// or https://");
  for (unsigned char c : w.url)
    if (c < 0x20 || c == 0x7f) return std::unexpected("/webhook/url: " + webhook::redact_url(w.url) + " holds a control character");
  if (auto ca = j.find("caFile"); ca != j.end()) {
    if (!ca->is_string()) return std::unexpected("/webhook/caFile: expected a path on the host");
    w.ca_file = ca->get<std::string>();
  }
  return w;
}

json webhook_to_json(const Webhook& w) {
  json j{{"url", w.url}};
  if (!w.ca_file.empty()) j["caFile"] = w.ca_file;
  return j;
}

json autostop_notice(double idle_seconds, const std::string& action, const std::string& armed_at) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  json j{{"event", "autostop.fired"}, {"host", host}, {"idleSeconds", idle_seconds},
         {"idleMinutes", idle_seconds / 60.0}, {"action", action}};
  if (!armed_at.empty()) j["armedAt"] = armed_at;
  return j;
}

std::string curl_config_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out + "\"";
}

json send_webhook(const Webhook& w, const json& body, const std::string& curl_path) {
  const std::string shown = webhook::redact_url(w.url);
  const std::string curl = curl_path.empty() ? find_on_path("curl") : curl_path;
  if (curl.empty() || ::access(curl.c_str(), X_OK) != 0)
    return {{"sent", false}, {"to", shown},
            {"reason", "no curl on the host's PATH (the agent does not link libcurl): install curl on the host "
                       "(e.g. apt-get install curl), or send the notice from preStop/command"}};
  std::string ca = w.ca_file;
  if (const char* env = std::getenv("FERRY_WEBHOOK_CA_FILE"); ca.empty() && env && *env) ca = env;
  std::string config = "url = " + curl_config_quote(w.url) + "\n" + "data-binary = " + curl_config_quote(body.dump()) + "\n";
  if (!ca.empty()) config += "cacert = " + curl_config_quote(ca) + "\n";
  auto r = run_curl(curl, config);
  std::string output = scrub(r.output, w.url);
  // --write-out prints the status last (000 when there was none); curl's errors come before it.
  int status = 0;
  if (output.size() >= 3) {
    const std::string tail = output.substr(output.size() - 3);
    if (tail.find_first_not_of("0123456789") == std::string::npos) {
      status = std::stoi(tail);
      output.resize(output.size() - 3);
      output = scrub(output, w.url);
    }
  }
  if (r.exit_code == 0 && status >= 200 && status < 300) return {{"sent", true}, {"via", "curl"}, {"status", status}, {"to", shown}};
  std::string reason = r.exit_code < 0 ? "curl could not be started"
                       : r.exit_code == 127 ? "curl could not be executed (" + curl + ")"
                       : status >= 300 ? "the receiver answered HTTP " + std::to_string(status)
                                       : "curl exited with " + std::to_string(r.exit_code);
  if (!output.empty()) reason += ": " + output;
  json j{{"sent", false}, {"via", "curl"}, {"to", shown}, {"reason", reason}};
  if (status) j["status"] = status;
  return j;
}

}  // namespace ferry::agent::autostop
