// AES-CTR with a precomputed keystream, as an OpenSSL 3 provider (see aes_ctr_provider.hpp).
#include "helper/ssh/aes_ctr_provider.hpp"

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/provider.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

namespace ferry::ssh {
namespace {

constexpr const char* kProviderName = "ferry-aes-ctr";
constexpr const char* kPreferProvider = "?provider=ferry-aes-ctr";
// 16 KiB of keystream per refill: big enough that OpenSSL's per-call cost vanishes behind its
// 8-block AES-NI pipeline, small enough to stay in L1/L2 while libssh2 consumes it.
constexpr std::size_t kKeystreamBytes = 16 << 10;
constexpr std::size_t kIvLen = 16;

std::atomic<std::uint64_t> g_contexts{0};
std::atomic<std::uint64_t> g_keystream_bytes{0};

const unsigned char* zeros() {
  static const std::array<unsigned char, kKeystreamBytes> z{};
  return z.data();
}

// The default provider's AES-CTR for a key length, fetched once (explicitly from "default": the
// process prefers this provider, and the keystream must not come from itself).
const EVP_CIPHER* default_ctr(std::size_t key_len) {
  static EVP_CIPHER* c128 = EVP_CIPHER_fetch(nullptr, "AES-128-CTR", "provider=default");
  static EVP_CIPHER* c192 = EVP_CIPHER_fetch(nullptr, "AES-192-CTR", "provider=default");
  static EVP_CIPHER* c256 = EVP_CIPHER_fetch(nullptr, "AES-256-CTR", "provider=default");
  switch (key_len) {
    case 16: return c128;
    case 24: return c192;
    case 32: return c256;
    default: return nullptr;
  }
}

struct CtrContext {
  explicit CtrContext(std::size_t key_len) : key_len(key_len) {}
  CtrContext(const CtrContext&) = delete;
  CtrContext& operator=(const CtrContext&) = delete;
  ~CtrContext() {
    EVP_CIPHER_CTX_free(inner);
    OPENSSL_cleanse(key.data(), key.size());
    OPENSSL_cleanse(stream.data(), stream.size());
  }

  std::size_t key_len;
  EVP_CIPHER_CTX* inner = nullptr;  // the default provider's CTR, positioned after `stream`
  std::array<unsigned char, 32> key{};
  std::array<unsigned char, kIvLen> iv{};
  bool have_key = false;
  bool have_iv = false;
  std::array<unsigned char, kKeystreamBytes> stream{};
  std::size_t pos = kKeystreamBytes;  // next unused keystream byte; == size means empty
};

bool refill(CtrContext& c) {
  int outl = 0;
  if (EVP_EncryptUpdate(c.inner, c.stream.data(), &outl, zeros(), static_cast<int>(kKeystreamBytes)) != 1 ||
      outl != static_cast<int>(kKeystreamBytes))
    return false;
  c.pos = 0;
  // Counted here, not per call: a locked add per 16-byte block cost more than the XOR.
  g_keystream_bytes.fetch_add(kKeystreamBytes, std::memory_order_relaxed);
  return true;
}

// EVP allows key and IV to arrive in separate init calls; the keystream restarts when both are known.
int ctr_init(void* vctx, const unsigned char* key, std::size_t key_len, const unsigned char* iv, std::size_t iv_len,
             const OSSL_PARAM[]) {
  auto& c = *static_cast<CtrContext*>(vctx);
  if (key != nullptr) {
    if (key_len != c.key_len) return 0;
    std::memcpy(c.key.data(), key, key_len);
    c.have_key = true;
  }
  if (iv != nullptr) {
    if (iv_len != kIvLen) return 0;
    std::memcpy(c.iv.data(), iv, kIvLen);
    c.have_iv = true;
  }
  if (key == nullptr && iv == nullptr) return 1;
  c.pos = kKeystreamBytes;
  if (!c.have_key || !c.have_iv) return 1;
  if (c.inner == nullptr && (c.inner = EVP_CIPHER_CTX_new()) == nullptr) return 0;
  const EVP_CIPHER* cipher = default_ctr(c.key_len);
  if (cipher == nullptr || EVP_EncryptInit_ex2(c.inner, cipher, c.key.data(), c.iv.data(), nullptr) != 1) return 0;
  g_contexts.fetch_add(1, std::memory_order_relaxed);
  return 1;
}

int ctr_cipher(void* vctx, unsigned char* out, std::size_t* outl, std::size_t outsize, const unsigned char* in,
               std::size_t inl) {
  auto& c = *static_cast<CtrContext*>(vctx);
  if (c.inner == nullptr || outsize < inl) return 0;
  std::size_t done = 0;
  while (done < inl) {
    if (c.pos == kKeystreamBytes && !refill(c)) return 0;
    std::size_t n = std::min(inl - done, kKeystreamBytes - c.pos);
    const unsigned char* ks = c.stream.data() + c.pos;
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {  // libssh2 calls with 16 bytes: two word XORs
      std::uint64_t a, k;
      std::memcpy(&a, in + done + i, 8);
      std::memcpy(&k, ks + i, 8);
      a ^= k;
      std::memcpy(out + done + i, &a, 8);
    }
    for (; i < n; ++i) out[done + i] = static_cast<unsigned char>(in[done + i] ^ ks[i]);
    c.pos += n;
    done += n;
  }
  *outl = inl;
  return 1;
}

int ctr_final(void*, unsigned char*, std::size_t* outl, std::size_t) {
  *outl = 0;
  return 1;
}

void* ctr_dupctx(void* vctx) {
  const auto& c = *static_cast<const CtrContext*>(vctx);
  auto* d = new (std::nothrow) CtrContext(c.key_len);
  if (d == nullptr) return nullptr;
  d->key = c.key;
  d->iv = c.iv;
  d->have_key = c.have_key;
  d->have_iv = c.have_iv;
  d->stream = c.stream;
  d->pos = c.pos;
  if (c.inner != nullptr &&
      ((d->inner = EVP_CIPHER_CTX_new()) == nullptr || EVP_CIPHER_CTX_copy(d->inner, c.inner) != 1)) {
    delete d;
    return nullptr;
  }
  return d;
}

void ctr_freectx(void* vctx) { delete static_cast<CtrContext*>(vctx); }

int set_common_params(OSSL_PARAM params[], std::size_t key_len) {
  OSSL_PARAM* p = nullptr;
  if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_KEYLEN)) != nullptr && !OSSL_PARAM_set_size_t(p, key_len))
    return 0;
  if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_IVLEN)) != nullptr && !OSSL_PARAM_set_size_t(p, kIvLen))
    return 0;
  return 1;
}

template <std::size_t KeyLen>
int ctr_get_params(OSSL_PARAM params[]) {
  OSSL_PARAM* p = nullptr;
  if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_MODE)) != nullptr && !OSSL_PARAM_set_uint(p, EVP_CIPH_CTR_MODE))
    return 0;
  if ((p = OSSL_PARAM_locate(params, OSSL_CIPHER_PARAM_BLOCK_SIZE)) != nullptr && !OSSL_PARAM_set_size_t(p, 1))
    return 0;
  for (const char* flag : {OSSL_CIPHER_PARAM_AEAD, OSSL_CIPHER_PARAM_CUSTOM_IV, OSSL_CIPHER_PARAM_CTS,
                           OSSL_CIPHER_PARAM_TLS1_MULTIBLOCK, OSSL_CIPHER_PARAM_HAS_RAND_KEY})
    if ((p = OSSL_PARAM_locate(params, flag)) != nullptr && !OSSL_PARAM_set_int(p, 0)) return 0;
  return set_common_params(params, KeyLen);
}

int ctr_get_ctx_params(void* vctx, OSSL_PARAM params[]) {
  return set_common_params(params, static_cast<CtrContext*>(vctx)->key_len);
}

// Only the lengths this cipher already has are accepted; padding and the like mean nothing to CTR.
int ctr_set_ctx_params(void* vctx, const OSSL_PARAM params[]) {
  const OSSL_PARAM* p = OSSL_PARAM_locate_const(params, OSSL_CIPHER_PARAM_KEYLEN);
  std::size_t len = 0;
  if (p != nullptr && (!OSSL_PARAM_get_size_t(p, &len) || len != static_cast<CtrContext*>(vctx)->key_len)) return 0;
  return 1;
}

const OSSL_PARAM* ctr_gettable_params(void*) {
  static const OSSL_PARAM table[] = {OSSL_PARAM_uint(OSSL_CIPHER_PARAM_MODE, nullptr),
                                     OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, nullptr),
                                     OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_IVLEN, nullptr),
                                     OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_BLOCK_SIZE, nullptr),
                                     OSSL_PARAM_int(OSSL_CIPHER_PARAM_AEAD, nullptr),
                                     OSSL_PARAM_int(OSSL_CIPHER_PARAM_CUSTOM_IV, nullptr),
                                     OSSL_PARAM_int(OSSL_CIPHER_PARAM_CTS, nullptr),
                                     OSSL_PARAM_int(OSSL_CIPHER_PARAM_TLS1_MULTIBLOCK, nullptr),
                                     OSSL_PARAM_int(OSSL_CIPHER_PARAM_HAS_RAND_KEY, nullptr),
                                     OSSL_PARAM_END};
  return table;
}

const OSSL_PARAM* ctr_gettable_ctx_params(void*, void*) {
  static const OSSL_PARAM table[] = {OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, nullptr),
                                     OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_IVLEN, nullptr), OSSL_PARAM_END};
  return table;
}

const OSSL_PARAM* ctr_settable_ctx_params(void*, void*) {
  static const OSSL_PARAM table[] = {OSSL_PARAM_size_t(OSSL_CIPHER_PARAM_KEYLEN, nullptr), OSSL_PARAM_END};
  return table;
}

template <std::size_t KeyLen>
void* ctr_newctx(void*) {
  return new (std::nothrow) CtrContext(KeyLen);
}

// OpenSSL's dispatch tables hold plain function pointers of a generic type.
template <class F>
OSSL_DISPATCH fn(int id, F* f) {
  return OSSL_DISPATCH{id, reinterpret_cast<void (*)()>(f)};
}

template <std::size_t KeyLen>
const OSSL_DISPATCH* ctr_functions() {
  static const OSSL_DISPATCH table[] = {
      fn(OSSL_FUNC_CIPHER_NEWCTX, &ctr_newctx<KeyLen>),
      fn(OSSL_FUNC_CIPHER_FREECTX, &ctr_freectx),
      fn(OSSL_FUNC_CIPHER_DUPCTX, &ctr_dupctx),
      fn(OSSL_FUNC_CIPHER_ENCRYPT_INIT, &ctr_init),
      fn(OSSL_FUNC_CIPHER_DECRYPT_INIT, &ctr_init),
      fn(OSSL_FUNC_CIPHER_UPDATE, &ctr_cipher),
      fn(OSSL_FUNC_CIPHER_FINAL, &ctr_final),
      fn(OSSL_FUNC_CIPHER_CIPHER, &ctr_cipher),
      fn(OSSL_FUNC_CIPHER_GET_PARAMS, &ctr_get_params<KeyLen>),
      fn(OSSL_FUNC_CIPHER_GET_CTX_PARAMS, &ctr_get_ctx_params),
      fn(OSSL_FUNC_CIPHER_SET_CTX_PARAMS, &ctr_set_ctx_params),
      fn(OSSL_FUNC_CIPHER_GETTABLE_PARAMS, &ctr_gettable_params),
      fn(OSSL_FUNC_CIPHER_GETTABLE_CTX_PARAMS, &ctr_gettable_ctx_params),
      fn(OSSL_FUNC_CIPHER_SETTABLE_CTX_PARAMS, &ctr_settable_ctx_params),
      OSSL_DISPATCH{0, nullptr},
  };
  return table;
}

const OSSL_ALGORITHM* query_operation(void*, int operation_id, int* no_store) {
  *no_store = 0;
  static const OSSL_ALGORITHM ciphers[] = {
      {"AES-128-CTR", "provider=ferry-aes-ctr", ctr_functions<16>(), "AES-128-CTR, keystream precomputed"},
      {"AES-192-CTR", "provider=ferry-aes-ctr", ctr_functions<24>(), "AES-192-CTR, keystream precomputed"},
      {"AES-256-CTR", "provider=ferry-aes-ctr", ctr_functions<32>(), "AES-256-CTR, keystream precomputed"},
      {nullptr, nullptr, nullptr, nullptr},
  };
  return operation_id == OSSL_OP_CIPHER ? ciphers : nullptr;
}

int provider_init(const OSSL_CORE_HANDLE*, const OSSL_DISPATCH*, const OSSL_DISPATCH** out, void** provctx) {
  static const OSSL_DISPATCH table[] = {fn(OSSL_FUNC_PROVIDER_QUERY_OPERATION, &query_operation),
                                        OSSL_DISPATCH{0, nullptr}};
  static int context_token = 0;  // OpenSSL treats a null provider context as "no context"
  *out = table;
  *provctx = &context_token;
  return 1;
}

struct InstallResult {
  bool active = false;
  std::string why_not;
};

InstallResult install_once() {
  if (const char* env = std::getenv("FERRY_SSH_AES_CTR"); env != nullptr && std::string_view(env) == "openssl")
    return {false, "FERRY_SSH_AES_CTR=openssl"};
  if (EVP_default_properties_is_fips_enabled(nullptr) == 1) return {false, "OpenSSL runs in FIPS mode"};
  if (OSSL_PROVIDER_add_builtin(nullptr, kProviderName, &provider_init) != 1 ||
      // retain_fallbacks: the default provider still loads by itself for everything else.
      OSSL_PROVIDER_try_load(nullptr, kProviderName, 1) == nullptr) {
    ERR_clear_error();
    return {false, "OpenSSL refused the provider"};
  }
  if (default_ctr(16) == nullptr || default_ctr(24) == nullptr || default_ctr(32) == nullptr) {
    ERR_clear_error();
    return {false, "OpenSSL's default provider has no AES-CTR"};
  }
  if (EVP_set_default_properties(nullptr, kPreferProvider) != 1) {
    ERR_clear_error();
    return {false, "OpenSSL refused the default property"};
  }
  return {true, {}};
}

}  // namespace

bool install_aes_ctr_provider(std::string* why_not) {
  static const InstallResult result = install_once();
  if (why_not != nullptr) *why_not = result.why_not;
  return result.active;
}

AesCtrStats aes_ctr_provider_stats() {
  return {g_contexts.load(std::memory_order_relaxed), g_keystream_bytes.load(std::memory_order_relaxed)};
}

}  // namespace ferry::ssh
