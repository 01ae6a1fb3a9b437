// host/connect: starts the project's agent (ferry-agent in the local sandbox for host "local",
// over SSH otherwise) and reports what the handshake learned. SSH links send host/stateChanged
// and ask the IDE (host/confirmHostKey, host/passphrase) what a terminal user would be asked.
#include <memory>
#include <mutex>
#include <regex>

#include <spdlog/spdlog.h>

#include "helper/remote/endpoint_factory.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/server/host_session.hpp"
#include "helper/server/project_lookup.hpp"
#include "protocol/messages.hpp"

namespace ferry::server {

namespace p = ferry::protocol;

namespace {

struct OfferedKey {
  std::string type;
  std::string fingerprint;
};

// The unknown-host error names the offered key ("... it offered TYPE key SHA256:..."); that is
// what the IDE must show the user.
std::optional<OfferedKey> offered_key(const p::ResponseError& e) {
  if (!e.data || !e.data->is_object() || e.data->value("kind", "") != "hostKeyUnknown") return std::nullopt;
  static const std::regex kOffered(R"(offered (\S+) key (SHA256:[A-Za-z0-9+/]+))");
  std::smatch m;
  if (!std::regex_search(e.message, m, kOffered)) return std::nullopt;
  return OfferedKey{m[1].str(), m[2].str()};
}

// The connect call's progress reporter, reachable from on_state only while that call runs: the
// endpoint outlives it and keeps reporting states (reconnects) long after.
class ReportWhileConnecting {
 public:
  explicit ReportWhileConnecting(HostSession::Report report) : slot_(std::make_shared<Slot>()) {
    slot_->report = std::move(report);
  }
  ~ReportWhileConnecting() {
    std::lock_guard lock(slot_->mutex);
    slot_->report = nullptr;
  }
  ReportWhileConnecting(const ReportWhileConnecting&) = delete;
  ReportWhileConnecting& operator=(const ReportWhileConnecting&) = delete;

  HostSession::Report reporter() const {
    return [slot = slot_](const std::string& message) {
      std::lock_guard lock(slot->mutex);
      if (slot->report) slot->report(message);
    };
  }

 private:
  struct Slot {
    std::mutex mutex;
    HostSession::Report report;
  };
  std::shared_ptr<Slot> slot_;
};

}  // namespace

// A passphrase provider that asks the IDE. The answer is handed to libssh2 and dropped; it is
// never logged or kept.
ssh::PassphraseProvider ide_passphrase_provider(p::OutgoingRequests& client, p::CancellationToken cancel) {
  return [&client, cancel](const std::string& key_path) -> std::optional<std::string> {
    auto answer = client.call(std::string(p::method::kHostPassphrase), p::to_json(p::PassphraseParams{key_path}),
                              kClientAnswerTimeout, cancel);
    if (!answer) {
      spdlog::warn("no passphrase for {}: {}", key_path, answer.error().message);
      return std::nullopt;
    }
    p::PassphraseResult r;
    if (auto bad = p::from_json(*answer, r)) {
      spdlog::warn("unreadable host/passphrase answer for {}: {}", key_path, bad->message);
      return std::nullopt;
    }
    return r.passphrase;
  };
}

HostSession::~HostSession() { close(); }

void HostSession::close() {
  std::lock_guard lock(mutex_);
  if (endpoint_) endpoint_->close();
  endpoint_.reset();
}

void HostSession::adopt(std::unique_ptr<remote::Endpoint> endpoint) {
  std::unique_ptr<remote::Endpoint> old;
  {
    std::lock_guard lock(mutex_);
    old = std::move(endpoint_);  // a reconnect replaces the old link
    endpoint_ = std::move(endpoint);
    spdlog::info("connected to {}", endpoint_->description());
  }
  if (old) old->close();
}

std::expected<p::HostConnectResult, p::ResponseError> HostSession::connect(const deploy::ProjectConfig& config,
                                                                            const p::CancellationToken& cancel,
                                                                            const Report& report) {
  if (config.host != "local") return connect_ssh(config, cancel, report);
  remote::LocalEndpointOptions options;
  options.project_name = config.name;
  auto endpoint = std::make_unique<remote::LocalEndpoint>(std::move(options));
  auto info = endpoint->connect();
  if (!info) return std::unexpected(info.error());
  if (cancel.cancelled()) {
    endpoint->close();
    return std::unexpected(p::cancelled_error(p::method::kHostConnect));
  }
  p::HostConnectResult result{config.host, info->version, info->protocol_version, info->root, info->os, info->arch};
  open_project_tunnels(*endpoint, config);
  adopt(std::move(endpoint));
  return result;
}

std::expected<p::HostConnectResult, p::ResponseError> HostSession::connect_ssh(const deploy::ProjectConfig& config,
                                                                                const p::CancellationToken& cancel,
                                                                                const Report& report) {
  auto target = remote::make_ssh_target("", "", std::nullopt, &config);
  if (!target)
    return std::unexpected(p::ResponseError{p::error_code::kProjectInvalid, target.error(), p::json{{"host", config.host}}});
  remote::SshEndpointOptions options = remote::ssh_endpoint_options(*target);
  options.session.passphrase = ide_passphrase_provider(client_, cancel);
  ReportWhileConnecting progress(report ? report : HostSession::Report([](const std::string&) {}));
  options.on_state = [this, report = progress.reporter()](const remote::HostState& s) {
    client_.notify(std::string(p::method::kHostStateChanged), remote::to_json(s));
    report(s.state == "reconnecting" ? "reconnecting (attempt " + std::to_string(s.attempt) + ")" : s.state);
  };

  auto endpoint = std::make_unique<remote::SshEndpoint>(options);
  auto info = endpoint->connect();
  if (!info) {
    auto key = offered_key(info.error());
    if (!key) return std::unexpected(info.error());
    // An unknown host: the IDE shows the fingerprint, as ssh would on a terminal.
    if (report) report("asking to trust " + key->fingerprint);
    auto answer = client_.call(std::string(p::method::kHostConfirmHostKey),
                               p::to_json(p::ConfirmHostKeyParams{target->host, key->type, key->fingerprint}),
                               kClientAnswerTimeout, cancel);
    p::ConfirmHostKeyResult decision;
    if (answer) {
      if (auto bad = p::from_json(*answer, decision))
        return std::unexpected(p::ResponseError{p::error_code::kAgentUnavailable,
                                                "unreadable host/confirmHostKey answer: " + bad->message, {}});
    } else if (cancel.cancelled()) {
      return std::unexpected(p::cancelled_error(p::method::kHostConnect));
    }
    if (!decision.accept)
      return std::unexpected(p::ResponseError{
          p::error_code::kAgentUnavailable,
          "host key " + key->type + " " + key->fingerprint + " of " + target->host +
              " was not accepted; nothing recorded" + (answer ? "" : " (" + answer.error().message + ")"),
          p::json{{"kind", "hostKeyRejected"}, {"host", target->host}, {"fingerprint", key->fingerprint}}});
    // Record exactly the key the user saw: a different key offered on the retry is refused.
    options.session.trust_unknown = true;
    options.session.expect_fingerprint = key->fingerprint;
    endpoint = std::make_unique<remote::SshEndpoint>(options);
    info = endpoint->connect();
    if (!info) return std::unexpected(info.error());
  }
  if (cancel.cancelled()) {
    endpoint->close();
    return std::unexpected(p::cancelled_error(p::method::kHostConnect));
  }
  p::HostConnectResult result{target->host, info->version, info->protocol_version, info->root, info->os, info->arch};
  open_project_tunnels(*endpoint, config);
  adopt(std::move(endpoint));
  return result;
}

void bind_host_methods(p::BindingTable& table, const ServerOptions& options, HostSession& session) {
  table.request<p::HostConnectParams, p::HostConnectResult>(
      p::method::kHostConnect,
      [&options, &session](const p::HostConnectParams& params,
                           p::CallContext& ctx) -> std::expected<p::HostConnectResult, p::ResponseError> {
        auto config = lookup_project(params.path, options);
        if (!config) return std::unexpected(config.error());
        auto progress = ctx.progress();
        progress.begin("Connecting to " + config->host);
        auto result = session.connect(*config, ctx.cancellation(),
                                      [&progress](const std::string& message) { progress.report(message); });
        progress.end(result ? "connected" : "failed");
        return result;
      },
      p::Execution::worker);
  if (options.test_methods) {
    // The transcripts' way to make the server ask host/confirmHostKey without an SSH server:
    // params are the question, the result is the client's decision.
    table.request<p::ConfirmHostKeyParams, p::json>(
        p::method::kTestConfirmHostKey,
        [&session](const p::ConfirmHostKeyParams& params,
                   p::CallContext& ctx) -> std::expected<p::json, p::ResponseError> {
          auto answer = session.client().call(std::string(p::method::kHostConfirmHostKey), p::to_json(params),
                                              std::chrono::seconds(30), ctx.cancellation());
          if (!answer) return std::unexpected(answer.error());
          p::ConfirmHostKeyResult decision;
          if (auto bad = p::from_json(*answer, decision))
            return std::unexpected(p::ResponseError{p::error_code::kInvalidParams,
                                                    "unreadable host/confirmHostKey answer: " + bad->message, {}});
          return p::json{{"accept", decision.accept}};
        },
        p::Execution::worker);
  }
  table.reserve_name(p::method::kHostStateChanged);
  table.reserve_name(p::method::kHostConfirmHostKey);
  table.reserve_name(p::method::kHostPassphrase);
}

}  // namespace ferry::server
