// What ferry-train does after `done`: run a shell command and/or POST the done event to a webhook
// whose URL comes from an environment variable. Plain HTTP/1.1 only; https is refused with a clear error.
#pragma once

#include <chrono>
#include <expected>
#include <string>

namespace ferry::train {

struct HttpUrl {
  std::string host;
  int port = 80;
  std::string target;  // path + query, as sent in the request line
  std::string redacted() const;  // scheme://host:port/path without the query string, for messages
};

std::expected<HttpUrl, std::string> parse_http_url(const std::string& url);

// POSTs `body` as application/json; returns the HTTP status code.
std::expected<int, std::string> http_post_json(const HttpUrl& url, const std::string& body,
                                               std::chrono::milliseconds timeout);

// Runs `command` with /bin/sh -c, `done_json` in FERRY_TRAIN_DONE; returns the exit status.
std::expected<int, std::string> run_shell_command(const std::string& command, const std::string& done_json);

}  // namespace ferry::train
