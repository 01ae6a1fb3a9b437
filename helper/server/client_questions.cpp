// Questions to the person at the editor: see client_questions.hpp.
#include "helper/server/client_questions.hpp"

#include <spdlog/spdlog.h>

#include "protocol/messages.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
using p::json;

namespace {

bool flag_at(const json& j, std::initializer_list<const char*> path) {
  const json* at = &j;
  for (const char* key : path) {
    if (!at->is_object() || !at->contains(key)) return false;
    at = &(*at)[key];
  }
  return at->is_boolean() ? at->get<bool>() : !at->is_null();
}

}  // namespace

ClientTraits client_traits(const json& params) {
  ClientTraits t;
  const json caps = params.is_object() ? params.value("capabilities", json::object()) : json::object();
  t.ferry = flag_at(caps, {"experimental", "ferry"});
  t.work_done_progress = flag_at(caps, {"window", "workDoneProgress"});
  t.show_document = flag_at(caps, {"window", "showDocument", "support"});
  t.watched_files_registration = flag_at(caps, {"workspace", "didChangeWatchedFiles", "dynamicRegistration"});
  t.code_lens_refresh = flag_at(caps, {"workspace", "codeLens", "refreshSupport"});
  if (params.is_object() && params.contains("clientInfo") && params["clientInfo"].is_object())
    t.name = params["clientInfo"].value("name", "");
  return t;
}

void ClientQuestions::set_traits(ClientTraits traits) {
  std::lock_guard lock(mutex_);
  traits_ = std::move(traits);
}

ClientTraits ClientQuestions::traits() const {
  std::lock_guard lock(mutex_);
  return traits_;
}

std::optional<std::string> ClientQuestions::choose(MessageType type, const std::string& message,
                                                   const std::vector<std::string>& actions,
                                                   const p::CancellationToken& cancel) {
  json items = json::array();
  for (const auto& a : actions) items.push_back(json{{"title", a}});
  auto answer = client_.call("window/showMessageRequest",
                             json{{"type", static_cast<int>(type)}, {"message", message}, {"actions", items}},
                             kClientAnswerTimeout, cancel);
  if (!answer) {
    spdlog::warn("no answer to \"{}\": {}", message, answer.error().message);
    return std::nullopt;
  }
  if (!answer->is_object() || !answer->contains("title") || !(*answer)["title"].is_string()) return std::nullopt;
  return (*answer)["title"].get<std::string>();
}

void ClientQuestions::show(MessageType type, const std::string& message) {
  client_.notify("window/showMessage", json{{"type", static_cast<int>(type)}, {"message", message}});
}

void ClientQuestions::log(MessageType type, const std::string& message) {
  client_.notify("window/logMessage", json{{"type", static_cast<int>(type)}, {"message", message}});
}

std::expected<bool, p::ResponseError> ClientQuestions::confirm_host_key(const std::string& host, const std::string& key_type,
                                                                   const std::string& fingerprint,
                                                                   const p::CancellationToken& cancel) {
  if (!traits().ferry) {
    const std::string trust = "Trust and connect";
    auto choice = choose(MessageType::warning,
                         "ferry: " + host + " is not in known_hosts. It offered " + key_type + " key " + fingerprint +
                             ". Trust it only if your provider shows this fingerprint.",
                         {trust, "Cancel"}, cancel);
    if (!choice) return std::unexpected(p::ResponseError{p::error_code::kRequestCancelled, "no answer from the editor", {}});
    return *choice == trust;
  }
  auto answer = client_.call(std::string(p::method::kHostConfirmHostKey),
                             p::to_json(p::ConfirmHostKeyParams{host, key_type, fingerprint}), kClientAnswerTimeout, cancel);
  if (!answer) return std::unexpected(answer.error());
  p::ConfirmHostKeyResult decision;
  if (auto bad = p::from_json(*answer, decision))
    return std::unexpected(p::ResponseError{p::error_code::kInvalidParams, "unreadable host/confirmHostKey answer: " + bad->message, {}});
  return decision.accept;
}

std::optional<std::string> ClientQuestions::passphrase(const std::string& key_file, const p::CancellationToken& cancel) {
  if (!traits().ferry) {
    // A message cannot take a secret; the person can load the key where libssh2 finds it.
    show(MessageType::warning, "ferry: " + key_file + " is encrypted. Load it into ssh-agent (ssh-add " + key_file +
                                   ") and try again; ferry never stores passphrases.");
    return std::nullopt;
  }
  auto answer = client_.call(std::string(p::method::kHostPassphrase), p::to_json(p::PassphraseParams{key_file}),
                             kClientAnswerTimeout, cancel);
  if (!answer) {
    spdlog::warn("no passphrase for {}: {}", key_file, answer.error().message);
    return std::nullopt;
  }
  p::PassphraseResult r;
  if (auto bad = p::from_json(*answer, r)) {
    spdlog::warn("unreadable host/passphrase answer for {}: {}", key_file, bad->message);
    return std::nullopt;
  }
  return r.passphrase;
}

bool ClientQuestions::confirm_mass_delete(const std::string& reason, std::size_t count, const std::string& root,
                                          const p::CancellationToken& cancel) {
  if (!traits().ferry) {
    const std::string go = "Delete " + std::to_string(count) + " files";
    auto choice = choose(MessageType::warning, "ferry: " + reason + " (in " + root + "). Delete them on the box?",
                         {go, "Keep them"}, cancel);
    return choice && *choice == go;
  }
  json params{{"reason", reason}, {"count", count}, {"root", root}};
  auto answer = client_.call("sync/confirmMassDelete", std::move(params), kClientAnswerTimeout, cancel);
  if (!answer) {
    spdlog::warn("sync/confirmMassDelete: deletes held: {}", answer.error().message);
    return false;
  }
  if (!answer->is_object() || !answer->contains("accept") || !(*answer)["accept"].is_boolean()) {
    spdlog::warn("sync/confirmMassDelete: unreadable answer {}; deletes held", answer->dump());
    return false;
  }
  return (*answer)["accept"].get<bool>();
}

}  // namespace ferry::server
