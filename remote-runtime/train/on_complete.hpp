// What ferry-train does after `done`: run a shell command and/or POST the done event to a webhook
// whose URL comes from an environment variable, over http or https (libcurl, webhook.hpp; a
// self-signed receiver's CA through $FERRY_WEBHOOK_CA_FILE).
#pragma once

#include <chrono>
#include <string>

#include "remote-runtime/train/expected.hpp"

namespace ferry::train {

struct HttpUrl {
  std::string url;     // as given (a secret: never shown)
  std::string host;
  int port = 80;
  std::string target;  // path + query
  std::string redacted() const;  // scheme://host:port/… : no path, query or credentials, for messages
};

Expected<HttpUrl, std::string> parse_http_url(const std::string& url);

// POSTs `body` as application/json; returns the HTTP status code.
Expected<int, std::string> http_post_json(const HttpUrl& url, const std::string& body,
                                               std::chrono::milliseconds timeout);

// Runs `command` with /bin/sh -c, `done_json` in FERRY_TRAIN_DONE; returns the exit status.
Expected<int, std::string> run_shell_command(const std::string& command, const std::string& done_json);

}  // namespace ferry::train
