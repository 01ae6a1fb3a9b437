// The server's trust gate: see trust_gate.hpp.
#include "helper/server/trust_gate.hpp"

#include <spdlog/spdlog.h>

namespace ferry::server {

namespace p = ferry::protocol;
using p::json;

namespace {

std::string_view state_name(deploy::TrustState s) {
  switch (s) {
    case deploy::TrustState::trusted: return "trusted";
    case deploy::TrustState::changed: return "changed";
    case deploy::TrustState::untrusted: break;
  }
  return "untrusted";
}

// What the person was asked about: the project's trusted fields, as their digests.
std::string fields_key(const deploy::ProjectConfig& config) {
  std::string key;
  for (const auto& [field, digest] : deploy::trust_digests(config)) key += field + "=" + digest + ";";
  return key;
}

}  // namespace

p::ResponseError untrusted_error(const deploy::ProjectConfig& config, const deploy::TrustStatus& status) {
  return p::ResponseError{p::error_code::kProjectUntrusted, deploy::untrusted_message(config, status),
                          json{{"kind", "projectUntrusted"},
                               {"root", config.root.string()},
                               {"state", state_name(status.state)},
                               {"changed", status.changed}}};
}

void TrustGate::announce(const deploy::ProjectConfig& config, const deploy::TrustStatus& status) {
  if (!questions_.traits().ferry) return;  // a plain client has only the question itself
  json params{{"root", config.root.string()}, {"trusted", status.trusted()}, {"state", state_name(status.state)},
              {"changed", status.changed}};
  if (!status.trusted()) params["warnings"] = deploy::trust_summary(config).warnings;
  questions_.client().notify("project/trust", std::move(params));
}

std::expected<void, p::ResponseError> TrustGate::admit(const deploy::ProjectConfig& config,
                                                       const p::CancellationToken& cancel, bool ask_again) {
  deploy::TrustStore store;
  auto status = store.check(config);
  if (status.trusted()) return {};
  {
    const std::string key = fields_key(config);
    std::lock_guard lock(mutex_);
    auto& asked = asked_[config.root];
    if (!ask_again && asked == key) return std::unexpected(untrusted_error(config, status));
    asked = key;
  }
  spdlog::warn("{}: {}", config.name, deploy::untrusted_message(config, status));
  announce(config, status);
  const std::string trust = "Trust project";
  auto choice = questions_.choose(MessageType::warning, "ferry: " + deploy::trust_question(config, status),
                                  {trust, "Not now"}, cancel);
  if (!choice || *choice != trust) return std::unexpected(untrusted_error(config, status));
  if (auto recorded = store.trust(config); !recorded)
    return std::unexpected(p::ResponseError{p::error_code::kIoError, "ferry: could not record trust: " + recorded.error(), {}});
  spdlog::info("{}: trusted by the person at the editor", config.name);
  announce(config, store.check(config));
  return {};
}

}  // namespace ferry::server
