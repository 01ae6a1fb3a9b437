// What may be shown of a webhook URL (a secret: chat and CI webhooks carry their token in the
// path or query). Header-only and free of libcurl, so the agent's autostop watchdog shares it.
#pragma once

#include <string>

namespace ferry::webhook {

// "https://hooks.example.com:443/…": scheme, host and port only; "(not a URL)" when unparsable.
inline std::string redact_url(const std::string& url) {
  const auto scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return "(not a URL)";
  const auto host_start = scheme_end + 3;
  auto host_end = url.find_first_of("/?#", host_start);
  std::string authority = url.substr(host_start, host_end == std::string::npos ? std::string::npos : host_end - host_start);
  if (auto at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);  // user:password@
  return url.substr(0, host_start) + authority + "/…";
}

}  // namespace ferry::webhook
