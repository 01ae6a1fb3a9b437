// Webhook POSTs through libcurl: see webhook.hpp.
#include "remote-runtime/train/webhook.hpp"

#ifndef FERRY_NO_CURL
#include <curl/curl.h>
#endif

#include <cstdlib>
#include <memory>
#include <mutex>

#include "remote-runtime/train/std_compat.hpp"

namespace ferry::webhook {

#ifndef FERRY_NO_CURL
namespace {

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t discard(char*, size_t size, size_t n, void*) { return size * n; }

}  // namespace
#endif

Expected<int, std::string> post_json(const std::string& url, const std::string& json_body, const Options& options) {
  const std::string shown = redact_url(url);
  if (!starts_with(url, "http://") && !starts_with(url, "https://"))
    return Unexpected("webhook " + shown + ": the URL must start with http:// or https://");
#ifdef FERRY_NO_CURL
  (void)json_body;
  (void)options;
  return Unexpected("webhook " + shown + ": this ferry-train was built without libcurl (install libcurl4-openssl-dev "
                         "or your distribution's libcurl dev package on the box and rebuild)");
#else
  global_init();
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return Unexpected("webhook " + shown + ": libcurl could not start");
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(
      curl_slist_append(nullptr, "Content-Type: application/json"), curl_slist_free_all);
  char error[CURL_ERROR_SIZE] = {};
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, json_body.c_str());
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(json_body.size()));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout.count()));
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, options.user_agent.c_str());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  std::string ca = options.ca_file;
  if (ca.empty())
    if (const char* env = std::getenv("FERRY_WEBHOOK_CA_FILE"); env && *env) ca = env;
  if (!ca.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, ca.c_str());
  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    // libcurl's text may quote the URL it was given: say only what kind of failure it was.
    std::string why = curl_easy_strerror(rc);
    if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE)
      why += " (for a self-signed receiver, point FERRY_WEBHOOK_CA_FILE at its CA certificate)";
    return Unexpected("webhook " + shown + ": " + why);
  }
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  return static_cast<int>(status);
#endif
}

}  // namespace ferry::webhook
