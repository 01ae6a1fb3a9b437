// Webhook POSTs through libcurl: see webhook.hpp (ferry_webhook; webhook_lazy.cpp builds it again as
// ferry_webhook_lazy, so the header is no one target's). Built with FERRY_CURL_DLOPEN (the helper on
// Linux), libcurl is loaded on the first POST instead of at start: it and the two dozen
// libraries it needs cost every ferry command ~4 ms of dynamic loading, and few ever send one.
#include "remote-runtime/train/webhook.hpp"

#ifndef FERRY_NO_CURL
#include <curl/curl.h>
#endif
#ifdef FERRY_CURL_DLOPEN
#include <dlfcn.h>
#endif

#include <cstdlib>
#include <memory>
#include <mutex>

#include "remote-runtime/train/std_compat.hpp"

namespace ferry::webhook {

#ifndef FERRY_NO_CURL
namespace {

// The libcurl functions used here: linked, or looked up in libcurl.so.4 once.
struct CurlApi {
  decltype(&curl_global_init) global_init = nullptr;
  decltype(&curl_easy_init) easy_init = nullptr;
  decltype(&curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&curl_slist_append) slist_append = nullptr;
  decltype(&curl_slist_free_all) slist_free_all = nullptr;
  decltype(&curl_easy_setopt) easy_setopt = nullptr;
  decltype(&curl_easy_perform) easy_perform = nullptr;
  decltype(&curl_easy_strerror) easy_strerror = nullptr;
  decltype(&curl_easy_getinfo) easy_getinfo = nullptr;
};

#ifdef FERRY_CURL_DLOPEN
template <class F>
bool look_up(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(::dlsym(lib, name));
  return out != nullptr;
}

CurlApi load_curl() {
  CurlApi api;
  void* lib = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return api;
  bool ok = look_up(lib, "curl_global_init", api.global_init) && look_up(lib, "curl_easy_init", api.easy_init) &&
            look_up(lib, "curl_easy_cleanup", api.easy_cleanup) && look_up(lib, "curl_slist_append", api.slist_append) &&
            look_up(lib, "curl_slist_free_all", api.slist_free_all) && look_up(lib, "curl_easy_setopt", api.easy_setopt) &&
            look_up(lib, "curl_easy_perform", api.easy_perform) && look_up(lib, "curl_easy_strerror", api.easy_strerror) &&
            look_up(lib, "curl_easy_getinfo", api.easy_getinfo);
  if (!ok) api = CurlApi{};
  return api;
}
#else
CurlApi load_curl() {
  return CurlApi{curl_global_init, curl_easy_init,    curl_easy_cleanup,   curl_slist_append, curl_slist_free_all,
                 curl_easy_setopt, curl_easy_perform, curl_easy_strerror, curl_easy_getinfo};
}
#endif

// libcurl, initialized once; nullptr when it cannot be loaded.
const CurlApi* curl_api() {
  static const CurlApi api = [] {
    CurlApi a = load_curl();
    if (a.global_init) a.global_init(CURL_GLOBAL_DEFAULT);
    return a;
  }();
  return api.easy_init ? &api : nullptr;
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
  const CurlApi* api = curl_api();
  if (!api) return Unexpected("webhook " + shown + ": libcurl.so.4 could not be loaded (install libcurl4)");
  std::unique_ptr<CURL, void (*)(CURL*)> curl(api->easy_init(), api->easy_cleanup);
  if (!curl) return Unexpected("webhook " + shown + ": libcurl could not start");
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> headers(
      api->slist_append(nullptr, "Content-Type: application/json"), api->slist_free_all);
  char error[CURL_ERROR_SIZE] = {};
  CURL* c = curl.get();
  api->easy_setopt(c, CURLOPT_URL, url.c_str());
  api->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  api->easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  api->easy_setopt(c, CURLOPT_POSTFIELDS, json_body.c_str());
  api->easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(json_body.size()));
  api->easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout.count()));
  api->easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  api->easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  api->easy_setopt(c, CURLOPT_USERAGENT, options.user_agent.c_str());
  api->easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
  api->easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  std::string ca = options.ca_file;
  if (ca.empty())
    if (const char* env = std::getenv("FERRY_WEBHOOK_CA_FILE"); env && *env) ca = env;
  if (!ca.empty()) api->easy_setopt(c, CURLOPT_CAINFO, ca.c_str());
  const CURLcode rc = api->easy_perform(c);
  if (rc != CURLE_OK) {
    // libcurl's text may quote the URL it was given: say only what kind of failure it was.
    std::string why = api->easy_strerror(rc);
    if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE)
      why += " (for a self-signed receiver, point FERRY_WEBHOOK_CA_FILE at its CA certificate)";
    return Unexpected("webhook " + shown + ": " + why);
  }
  long status = 0;
  api->easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  return static_cast<int>(status);
#endif
}

}  // namespace ferry::webhook
