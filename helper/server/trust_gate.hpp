// The server's side of project trust (docs/security.md): before any link is made or used, the
// project's ferry.json must be trusted. The person is asked once per project and set of trusted
// fields (window/showMessageRequest: Trust / Not now), so a burst of saves asks once and a refused
// project fails fast afterwards; `ferry.trustProject` asks again on request. A ferry-aware client
// also gets project/trust notices for its status bar.
#pragma once

#include <expected>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>

#include "helper/deploy/project_trust.hpp"
#include "helper/server/client_questions.hpp"
#include "protocol/cancellation.hpp"
#include "protocol/jsonrpc.hpp"

namespace ferry::server {

class TrustGate {
 public:
  explicit TrustGate(ClientQuestions& questions) : questions_(questions) {}

  // Ok when the project is trusted, or the person says so now. `ask_again`: ask even when this
  // project with these fields was refused before (an explicit "trust this project" command).
  std::expected<void, protocol::ResponseError> admit(const deploy::ProjectConfig& config,
                                                     const protocol::CancellationToken& cancel, bool ask_again = false);

 private:
  void announce(const deploy::ProjectConfig& config, const deploy::TrustStatus& status);

  ClientQuestions& questions_;
  std::mutex mutex_;
  std::map<std::filesystem::path, std::string> asked_;  // project root -> the fields' digests it was asked about
};

// What a refusal looks like on the wire: kProjectUntrusted, data {kind, root, state, changed}.
protocol::ResponseError untrusted_error(const deploy::ProjectConfig& config, const deploy::TrustStatus& status);

}  // namespace ferry::server
