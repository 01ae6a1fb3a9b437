// Completion hooks: /bin/sh -c via posix_spawn, and the webhook POST through libcurl (webhook.hpp).
#include "remote-runtime/train/on_complete.hpp"

#include "remote-runtime/train/std_compat.hpp"
#include "remote-runtime/train/webhook.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

extern char** environ;

namespace ferry::train {

std::string HttpUrl::redacted() const { return webhook::redact_url(url); }

Expected<HttpUrl, std::string> parse_http_url(const std::string& url) {
  const bool https = starts_with(url, "https://");
  if (!https && !starts_with(url, "http://")) return Unexpected("webhook: URL must start with http:// or https://");
  const auto rest = url.substr(https ? 8 : 7);
  const auto slash = rest.find_first_of("/?");
  auto authority = rest.substr(0, slash);
  HttpUrl out;
  out.url = url;
  out.port = https ? 443 : 80;
  out.target = slash == std::string::npos ? "/" : rest.substr(slash);
  if (starts_with(out.target, "?")) out.target = "/" + out.target;
  if (authority.find('@') != std::string::npos) return Unexpected("webhook: credentials in the URL are not supported");
  const auto colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']') == std::string::npos) {
    const auto port_text = authority.substr(colon + 1);
    char* end = nullptr;
    const long port = std::strtol(port_text.c_str(), &end, 10);
    if (port_text.empty() || *end != '\0' || port < 1 || port > 65535) return Unexpected("webhook: bad port in URL");
    out.port = static_cast<int>(port);
    authority = authority.substr(0, colon);
  }
  if (starts_with(authority, "[") && ends_with(authority, "]")) authority = authority.substr(1, authority.size() - 2);
  if (authority.empty()) return Unexpected("webhook: URL has no host");
  out.host = authority;
  return out;
}

Expected<int, std::string> http_post_json(const HttpUrl& url, const std::string& body,
                                               std::chrono::milliseconds timeout) {
  webhook::Options options;
  options.timeout = timeout;
  options.user_agent = "ferry-train";
  return webhook::post_json(url.url, body, options);
}

Expected<int, std::string> run_shell_command(const std::string& command, const std::string& done_json) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    if (!starts_with(*e, "FERRY_TRAIN_DONE=")) env_strings.emplace_back(*e);
  }
  env_strings.push_back("FERRY_TRAIN_DONE=" + done_json);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  // The command's stdout would corrupt our JSON-lines stdout: send it to stderr.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, "/bin/sh", &actions, nullptr, const_cast<char* const*>(argv), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Unexpected(std::string("on_complete command: spawn failed: ") + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Unexpected(std::string("on_complete command: wait failed: ") + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

}  // namespace ferry::train
