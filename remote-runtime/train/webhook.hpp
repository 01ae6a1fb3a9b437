// One JSON POST to a webhook over http or https, through libcurl: ferry-train's on_complete
// webhook and the helper's notifications share it. The URL is a secret (chat and CI webhooks
// carry their token in the path or query): it is never put in an error message or a log line;
// redact_url gives what may be shown.
#pragma once

#include <chrono>
#include <string>

#include "remote-runtime/train/expected.hpp"
#include "remote-runtime/train/url_redaction.hpp"

namespace ferry::webhook {

struct Options {
  std::chrono::milliseconds timeout{10000};
  // PEM bundle of CAs to trust instead of the system's (a self-signed receiver); empty:
  // $FERRY_WEBHOOK_CA_FILE if set, else the system store.
  std::string ca_file;
  std::string user_agent = "ferry";
};

// POSTs `json_body` (Content-Type: application/json); the HTTP status, or why not (with the
// redacted URL). Only http:// and https:// are accepted; redirects are not followed.
Expected<int, std::string> post_json(const std::string& url, const std::string& json_body, const Options& options = {});

}  // namespace ferry::webhook
