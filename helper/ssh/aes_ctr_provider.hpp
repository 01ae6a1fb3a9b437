// A keystream-buffering AES-CTR for libssh2, registered as an OpenSSL 3 provider.
//
// libssh2 1.10 encrypts and decrypts one 16-byte block per EVP_Cipher call. Through OpenSSL 3's
// default provider each call costs ten times the AES work it does (dispatch, ctr128 bookkeeping,
// a single unpipelined AES-NI block), which capped ferry's channels at ~450 MB/s. This provider
// computes the keystream 16 KiB at a time with the default provider's own AES-CTR (pipelined) and
// answers each call with an XOR, as OpenSSH's cipher-ctr does. The bytes are exactly AES-CTR's.
#pragma once

#include <cstdint>
#include <string>

namespace ferry::ssh {

// Registers the provider and makes OpenSSL prefer it for AES-{128,192,256}-CTR in this process
// (an optional "?provider=" default property, so every other algorithm is unaffected). Idempotent.
// Not installed when OpenSSL runs in FIPS mode or FERRY_SSH_AES_CTR=openssl is set. Returns
// whether the provider is active, and why not in `why_not`.
bool install_aes_ctr_provider(std::string* why_not = nullptr);

struct AesCtrStats {
  std::uint64_t contexts = 0;  // cipher contexts initialised with a key
  std::uint64_t keystream_bytes = 0;  // keystream computed (in 16 KiB steps)
};
// Process-wide counters, so tests can see that libssh2 really went through the provider.
AesCtrStats aes_ctr_provider_stats();

}  // namespace ferry::ssh
