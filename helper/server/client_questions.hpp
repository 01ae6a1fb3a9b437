// What the server asks or tells the person at the editor, in the form the client understands: a
// client that declares ferry's experimental capability gets ferry's own requests
// (host/confirmHostKey, host/passphrase, sync/confirmMassDelete); any other LSP client gets
// window/showMessageRequest with actions, and window/showMessage where no answer can be given
// (a passphrase cannot be typed into a message: it is told to load the key into ssh-agent).
// Every question has a deadline; no answer is "no".
#pragma once

#include <atomic>
#include <expected>
#include <mutex>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "protocol/cancellation.hpp"
#include "protocol/outgoing_requests.hpp"

namespace ferry::server {

// How long a person gets to answer (they are reading a fingerprint, or away from the desk).
inline constexpr std::chrono::minutes kClientAnswerTimeout{5};

// LSP's MessageType.
enum class MessageType { error = 1, warning = 2, info = 3, log = 4 };

// What initialize said about the client, as far as the server's behaviour depends on it.
struct ClientTraits {
  bool ferry = false;              // capabilities.experimental.ferry: ferry's own methods
  bool work_done_progress = false;  // window.workDoneProgress: server-made progress tokens
  bool show_document = false;       // window.showDocument.support
  bool watched_files_registration = false;  // workspace.didChangeWatchedFiles.dynamicRegistration
  bool code_lens_refresh = false;   // workspace.codeLens.refreshSupport
  std::string name;                 // clientInfo.name, for logs
};
ClientTraits client_traits(const protocol::json& initialize_params);

class ClientQuestions {
 public:
  explicit ClientQuestions(protocol::OutgoingRequests& client) : client_(client) {}

  void set_traits(ClientTraits traits);
  ClientTraits traits() const;
  protocol::OutgoingRequests& client() { return client_; }

  // An unknown host key: true = trust it. Errors say why nothing was decided (the client's own
  // error response as it was sent).
  std::expected<bool, protocol::ResponseError> confirm_host_key(const std::string& host, const std::string& key_type,
                                                    const std::string& fingerprint,
                                                    const protocol::CancellationToken& cancel);
  // The passphrase of an encrypted key; nullopt skips the key.
  std::optional<std::string> passphrase(const std::string& key_file, const protocol::CancellationToken& cancel);
  // Deletes held by the mass-delete guard: true = go ahead.
  bool confirm_mass_delete(const std::string& reason, std::size_t count, const std::string& root,
                           const protocol::CancellationToken& cancel);

  // window/showMessageRequest: the chosen action's title, nullopt when dismissed or unanswered.
  std::optional<std::string> choose(MessageType type, const std::string& message, const std::vector<std::string>& actions,
                                    const protocol::CancellationToken& cancel);
  // window/showMessage.
  void show(MessageType type, const std::string& message);
  // window/logMessage: the editor's log, no pop-up.
  void log(MessageType type, const std::string& message);

 private:
  protocol::OutgoingRequests& client_;
  mutable std::mutex mutex_;
  ClientTraits traits_;
};

}  // namespace ferry::server
