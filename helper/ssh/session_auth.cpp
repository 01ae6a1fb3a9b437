// Session::authenticate: public keys only, from ssh-agent first (filtered by IdentitiesOnly), then
// the key files of the host's config (asking for passphrases); every key tried goes into the log
// that a failure reports.
#include <utility>  // before asio on GCC 12

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include <libssh2.h>

#include "common/user_dirs.hpp"
#include "helper/ssh/private_key_file.hpp"
#include "helper/ssh/session.hpp"
#include "helper/ssh/session_internal.hpp"

namespace ferry::ssh {
namespace {

// The ssh-agent connection of one authentication: disconnected and freed however it ends.
class AgentConnection {
 public:
  explicit AgentConnection(LIBSSH2_SESSION* session) : agent_(libssh2_agent_init(session)) {}
  ~AgentConnection() {
    if (!agent_) return;
    libssh2_agent_disconnect(agent_);
    libssh2_agent_free(agent_);
  }
  AgentConnection(const AgentConnection&) = delete;
  AgentConnection& operator=(const AgentConnection&) = delete;

  explicit operator bool() const { return agent_ != nullptr; }
  LIBSSH2_AGENT* get() const { return agent_; }

 private:
  LIBSSH2_AGENT* agent_;
};

// Public halves of the configured identities, so IdentitiesOnly can filter the agent's keys.
std::vector<std::vector<std::uint8_t>> configured_public_blobs(const HostConfig& host) {
  std::vector<std::vector<std::uint8_t>> blobs;
  for (const auto& f : host.identity_files) {
    std::ifstream in(f + ".pub");
    std::string type, b64;
    if (in >> type >> b64)
      if (auto blob = base64_decode(b64)) blobs.push_back(std::move(*blob));
  }
  return blobs;
}

// A timeout or a closed link ends authentication; anything else moves on to the next key.
bool ends_authentication(const Error& e) {
  return e.code == make_error_code(Errc::kTimeout) || e.code == make_error_code(Errc::kClosed);
}

// One authentication's key sources, in the order authenticate tries them. Each returns nullopt when
// it settled nothing (try the next), else success or the error that ends authentication.
class KeyAuth {
 public:
  KeyAuth(Session& session, const SessionOptions& options, std::vector<std::string>& log, std::string& authenticated_with,
          Clock::time_point deadline)
      : session_(session), host_(session.host()), options_(options), auth_log_(log),
        authenticated_with_(authenticated_with), deadline_(deadline) {}

  asio::awaitable<std::optional<Result<void>>> with_agent();
  asio::awaitable<std::optional<Result<void>>> with_key_files();

 private:
  Session& session_;
  const HostConfig& host_;
  const SessionOptions& options_;
  std::vector<std::string>& auth_log_;
  std::string& authenticated_with_;
  Clock::time_point deadline_;
};

}  // namespace

asio::awaitable<Result<void>> Session::authenticate(Clock::time_point deadline) {
  const std::string& user = host_.user;
  auto ulen = static_cast<unsigned>(user.size());
  std::string who = describe(host_);
  // Keys first: asking for the methods is a "none" request, a round trip every connect paid
  // before any key was tried (50 ms at 50 ms). It is asked only when no key got in, to explain
  // why (or to find a server that lets "none" in).
  KeyAuth keys(*this, options_, auth_log_, authenticated_with_, deadline);
  if (auto done = co_await keys.with_agent()) co_return std::move(*done);
  if (auto done = co_await keys.with_key_files()) co_return std::move(*done);
  auto methods = co_await retry_ptr<char>(
      *this, [&] { return libssh2_userauth_list(session_, user.c_str(), ulen); }, deadline, "asking " + who + " for auth methods");
  if (libssh2_userauth_authenticated(session_)) {
    authenticated_with_ = "none";
    co_return Result<void>{};
  }
  if (!methods) co_return std::unexpected(methods.error());
  std::string offered = *methods;
  if (offered.find("publickey") == std::string::npos)
    co_return std::unexpected(make_error(Errc::kAuthFailed, "authentication as " + who + " failed: the server offers only " +
                                                                offered + "; ferry authenticates with keys (agent or files)"));
  std::string tried;
  for (const auto& l : auth_log_) tried += "\n  - " + l;
  co_return std::unexpected(make_error(Errc::kAuthFailed, "authentication as " + who + " failed; tried:" + tried));
}

asio::awaitable<std::optional<Result<void>>> KeyAuth::with_agent() {
  const std::string& user = host_.user;
  const auto configured_blobs = configured_public_blobs(host_);
  // The agent's socket: the option ("" turns the agent off), else $SSH_AUTH_SOCK, else the
  // platform's own agents (Windows: Pageant and OpenSSH's pipe, which libssh2 finds itself).
  const char* env = std::getenv("SSH_AUTH_SOCK");
  std::optional<std::string> socket = options_.agent_socket;
  if (!socket && env && *env) socket = env;
  const auto fallback = options_.agent_socket ? std::nullopt : platform::default_ssh_agent();
  if ((!socket || socket->empty()) && !fallback) {
    auth_log_.push_back(options_.agent_socket ? "ssh-agent: off" : "ssh-agent: SSH_AUTH_SOCK not set");
    co_return std::nullopt;
  }
  const std::string agent_path = socket && !socket->empty() ? *socket : *fallback;
  AgentConnection agent(session_.raw());
  if (!agent) co_return std::nullopt;
  if (socket && !socket->empty()) libssh2_agent_set_identity_path(agent.get(), socket->c_str());
  if (libssh2_agent_connect(agent.get()) != 0) {
    auth_log_.push_back("ssh-agent at " + agent_path + ": cannot connect");
    co_return std::nullopt;
  }
  if (libssh2_agent_list_identities(agent.get()) != 0) {
    auth_log_.push_back("ssh-agent: cannot list keys");
    co_return std::nullopt;
  }
  libssh2_agent_publickey* id = nullptr;
  libssh2_agent_publickey* prev = nullptr;
  int listed = 0;
  while (libssh2_agent_get_identity(agent.get(), &id, prev) == 0) {
    prev = id;
    ++listed;
    std::vector<std::uint8_t> blob(id->blob, id->blob + id->blob_len);
    std::string label = "ssh-agent key " + key_type_of_blob(blob) + " " + sha256_fingerprint(blob) +
                        (id->comment && *id->comment ? std::string(" (") + id->comment + ")" : "");
    if (host_.identities_only && std::ranges::find(configured_blobs, blob) == configured_blobs.end()) {
      auth_log_.push_back(label + ": skipped (IdentitiesOnly)");
      continue;
    }
    auto r = co_await retry(session_, [&] { return static_cast<long>(libssh2_agent_userauth(agent.get(), user.c_str(), id)); },
                            deadline_, "agent auth");
    if (r) {
      authenticated_with_ = label;
      co_return Result<void>{};
    }
    if (ends_authentication(r.error())) co_return Result<void>(std::unexpected(r.error()));
    auth_log_.push_back(label + ": rejected");
  }
  if (listed == 0) auth_log_.push_back("ssh-agent at " + agent_path + ": no keys");
  co_return std::nullopt;
}

asio::awaitable<std::optional<Result<void>>> KeyAuth::with_key_files() {
  const std::string& user = host_.user;
  auto ulen = static_cast<unsigned>(user.size());
  int found = 0;
  for (const auto& file : host_.identity_files) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) {
      if (host_.identity_files_explicit) auth_log_.push_back(file + ": not found");
      continue;
    }
    ++found;
    auto info = inspect_private_key_file(file);
    if (!info) {
      auth_log_.push_back(file + ": " + info.error());
      continue;
    }
    std::optional<std::string> passphrase;
    if (info->encrypted) {
      if (options_.passphrase) passphrase = options_.passphrase(file);
      if (!passphrase) {
        auth_log_.push_back(file + ": encrypted and no passphrase was given");
        continue;
      }
    }
    std::string pub = file + ".pub";
    bool has_pub = std::filesystem::exists(pub, ec);
    const char* pass = passphrase ? passphrase->c_str() : "";
    auto r = co_await retry(
        session_,
        [&] {
          return static_cast<long>(libssh2_userauth_publickey_fromfile_ex(session_.raw(), user.c_str(), ulen,
                                                                          has_pub ? pub.c_str() : nullptr, file.c_str(), pass));
        },
        deadline_, "key auth");
    if (r) {
      authenticated_with_ = file;
      co_return Result<void>{};
    }
    if (ends_authentication(r.error())) co_return Result<void>(std::unexpected(r.error()));
    std::string why = r.error().code == libssh2_error(LIBSSH2_ERROR_FILE)
                          ? (info->encrypted ? "wrong passphrase or unsupported key format" : "unsupported key format")
                          : "rejected by the server";
    auth_log_.push_back(file + ": " + why);
  }
  if (found == 0 && !host_.identity_files_explicit) auth_log_.push_back("no key files in ~/.ssh (id_ed25519, id_ecdsa, ...)");
  co_return std::nullopt;
}

}  // namespace ferry::ssh
