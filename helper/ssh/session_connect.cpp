// Session::connect: the TCP connect (or, for a ProxyJump hop, a socket pair bridged to a
// direct-tcpip channel of the previous hop), libssh2's session on that socket, the handshake with
// ferry's algorithm preferences, and the host key check against known_hosts. Authentication is in
// session_auth.cpp.
#include <utility>  // before asio on GCC 12

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include "helper/ssh/aes_ctr_provider.hpp"
#include "helper/ssh/session.hpp"
#include "helper/ssh/session_internal.hpp"

namespace ferry::ssh {
namespace {

using asio::use_awaitable;

// libssh2 1.10 has neither chacha20 nor GCM; CTR modes are what OpenSSH 9 still offers it.
constexpr const char* kCiphers = "aes128-ctr,aes256-ctr,aes192-ctr";
constexpr const char* kMacs = "hmac-sha2-256,hmac-sha2-512,hmac-sha1";
const std::vector<std::string> kHostKeyAlgorithms{"ssh-ed25519",        "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384",
                                                  "ecdsa-sha2-nistp521", "rsa-sha2-512",        "rsa-sha2-256",
                                                  "ssh-rsa"};

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Before libssh2 keys its first cipher: libssh2 then gets the keystream-buffering AES-CTR.
    if (std::string why_not; !install_aes_ctr_provider(&why_not))
      spdlog::debug("ssh: OpenSSL's own AES-CTR in use ({})", why_not);
    libssh2_init(0);
  });
}

// Sets a preference list holding only what this libssh2 supports: given unknown names, libssh2
// 1.10 compacts the list with an overlapping memcpy (undefined behaviour ASan reports).
void set_method_pref(LIBSSH2_SESSION* session, int type, const std::string& wanted) {
  const char** algs = nullptr;
  int n = libssh2_session_supported_algs(session, type, &algs);
  std::vector<std::string> supported;
  for (int i = 0; i < n; ++i) supported.emplace_back(algs[i]);
  if (algs) libssh2_free(session, algs);
  std::string list;
  std::size_t start = 0;
  while (start <= wanted.size()) {
    auto comma = wanted.find(',', start);
    std::string name = wanted.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!name.empty() && std::ranges::find(supported, name) != supported.end()) list += (list.empty() ? "" : ",") + name;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (!list.empty()) libssh2_session_method_pref(session, type, list.c_str());
}

// The known_hosts files to consult: the user's, then the global ones.
std::vector<std::filesystem::path> known_hosts_files(const HostConfig& host) {
  std::vector<std::filesystem::path> files(host.user_known_hosts_files.begin(), host.user_known_hosts_files.end());
  files.insert(files.end(), host.global_known_hosts_files.begin(), host.global_known_hosts_files.end());
  return files;
}

}  // namespace

asio::awaitable<Result<void>> Session::connect_tcp(Clock::time_point deadline) {
  using tcp = asio::ip::tcp;
  std::string what = "connecting to " + describe(host_);
  // A deadline's handler may run after this coroutine has ended (a timer that fired as the
  // operation completed is not cancelled by cancel()): it holds what it touches itself.
  auto resolver = std::make_shared<tcp::resolver>(executor_);
  auto expired = std::make_shared<bool>(false);
  asio::steady_timer timer(executor_, deadline);
  timer.async_wait([resolver, expired](boost::system::error_code ec) {
    if (!ec) {
      *expired = true;
      resolver->cancel();
    }
  });
  boost::system::error_code ec;
  auto results = co_await resolver->async_resolve(host_.hostname, std::to_string(host_.port),
                                                  asio::redirect_error(use_awaitable, ec));
  timer.cancel();
  if (*expired) co_return std::unexpected(timeout_error(what + " (resolving " + host_.hostname + ")"));
  if (ec) co_return std::unexpected(make_error(Errc::kConnectFailed, what + ": cannot resolve " + host_.hostname + ": " + ec.message()));
  std::string last = "no addresses";
  for (const auto& entry : results) {
    // A generic socket from the start, connected in place and then moved into socket_: no second
    // registration of one socket with the reactor (epoll or a completion port) on the way.
    auto sock = std::make_shared<StreamSocket>(executor_);
    const asio::generic::stream_protocol::endpoint target(entry.endpoint().data(), entry.endpoint().size(), IPPROTO_TCP);
    auto timed_out = std::make_shared<bool>(false);
    asio::steady_timer t(executor_, deadline);
    t.async_wait([sock, timed_out](boost::system::error_code e) {
      if (!e && sock->is_open()) {  // released (connected and handed on): nothing to close
        *timed_out = true;
        boost::system::error_code ignored;
        sock->close(ignored);
      }
    });
    co_await sock->async_connect(target, asio::redirect_error(use_awaitable, ec));
    t.cancel();
    if (*timed_out) co_return std::unexpected(timeout_error(what));
    if (ec) {
      last = entry.endpoint().address().to_string() + ": " + ec.message();
      continue;
    }
    sock->set_option(tcp::no_delay(true), ec);
    net::socket_no_inherit(sock->native_handle());
    socket_ = std::move(*sock);
    co_return start_libssh2();
  }
  co_return std::unexpected(make_error(Errc::kConnectFailed, what + ": " + last));
}

StreamSocket adopt_stream_socket(const Executor& executor, net::NativeSocket s, boost::system::error_code& ec) {
  const int family = net::socket_family(s);
  StreamSocket socket(executor);
  socket.assign(asio::generic::stream_protocol(family, family == AF_UNIX ? 0 : IPPROTO_TCP), s, ec);
  if (ec) net::socket_close(s);
  return socket;
}

Result<void> Session::attach_socket(net::NativeSocket s) {
  net::socket_no_inherit(s);
  boost::system::error_code ec;
  socket_ = adopt_stream_socket(executor_, s, ec);
  if (ec) return std::unexpected(make_error(Errc::kConnectFailed, "attaching the socket: " + ec.message()));
  return start_libssh2();
}

Result<void> Session::start_libssh2() {
  boost::system::error_code ec;
  socket_.non_blocking(true, ec);
  global_init();
  session_ = libssh2_session_init_ex(nullptr, nullptr, nullptr, this);
  if (!session_) return std::unexpected(make_error(Errc::kConnectFailed, "libssh2_session_init failed"));
  libssh2_session_set_blocking(session_, 0);
  libssh2_session_callback_set(session_, LIBSSH2_CALLBACK_RECV, reinterpret_cast<void*>(&Session::recv_hook));
  libssh2_session_callback_set(session_, LIBSSH2_CALLBACK_SEND, reinterpret_cast<void*>(&Session::send_hook));
  return {};
}

asio::awaitable<Result<void>> Session::handshake(Clock::time_point deadline) {
  std::string what = "SSH handshake with " + describe(host_);
  set_method_pref(session_, LIBSSH2_METHOD_CRYPT_CS, kCiphers);
  set_method_pref(session_, LIBSSH2_METHOD_CRYPT_SC, kCiphers);
  set_method_pref(session_, LIBSSH2_METHOD_MAC_CS, kMacs);
  set_method_pref(session_, LIBSSH2_METHOD_MAC_SC, kMacs);
  // Ask for a key type known_hosts already lists first, as OpenSSH does, so a host known by its
  // ECDSA key is not reported as changed because ed25519 was negotiated.
  std::vector<std::string> order;
  for (const auto& t : known_key_types(known_hosts_files(host_), host_.hostname, host_.port))
    if (std::ranges::find(kHostKeyAlgorithms, t) != kHostKeyAlgorithms.end()) order.push_back(t);
  for (const auto& t : kHostKeyAlgorithms)
    if (std::ranges::find(order, t) == order.end()) order.push_back(t);
  std::string prefs;
  for (const auto& t : order) prefs += (prefs.empty() ? "" : ",") + t;
  set_method_pref(session_, LIBSSH2_METHOD_HOSTKEY, prefs);
  const libssh2_socket_t fd = socket_.native_handle();
  auto r = co_await retry(*this, [&] { return static_cast<long>(libssh2_session_handshake(session_, fd)); }, deadline, what);
  if (!r) co_return std::unexpected(r.error());
  co_return Result<void>{};
}

Result<void> Session::check_host_key() {
  std::size_t len = 0;
  int type = 0;
  const char* raw = libssh2_session_hostkey(session_, &len, &type);
  if (!raw) return std::unexpected(make_error(Errc::kConnectFailed, "the server sent no host key"));
  PublicKey offered{"", std::vector<std::uint8_t>(raw, raw + len)};
  offered.type = key_type_of_blob(offered.blob);
  host_key_ = HostKeyInfo{host_.hostname, host_.port, offered, sha256_fingerprint(offered.blob), false, ""};
  auto check = ferry::ssh::check_host_key(known_hosts_files(host_), host_.hostname, host_.port, offered);
  std::string name = known_hosts_name(host_.hostname, host_.port);
  switch (check.status) {
    case HostKeyStatus::kMatch: return {};
    case HostKeyStatus::kRevoked:
      return std::unexpected(make_error(Errc::kHostKeyRevoked, "host key " + offered.type + " " + host_key_.fingerprint +
                                                                   " for " + name + " is marked @revoked in " +
                                                                   check.known[0].file + ":" + std::to_string(check.known[0].line)));
    case HostKeyStatus::kChanged: {
      std::string msg = "HOST KEY FOR " + name + " HAS CHANGED (possible man-in-the-middle attack). The server offered " +
                        offered.type + " " + host_key_.fingerprint + "; known_hosts lists";
      for (const auto& e : check.known)
        msg += " " + e.key.type + " " + sha256_fingerprint(e.key.blob) + " (" + e.file + ":" + std::to_string(e.line) + ")";
      msg += ". If the change is expected (the box was rebuilt), remove the old entry with: ssh-keygen -R '" + name +
             "' -f " + check.known[0].file + ", then run: ferry trust " + host_.alias;
      return std::unexpected(make_error(Errc::kHostKeyChanged, msg));
    }
    case HostKeyStatus::kUnknown: break;
  }
  if (options_.trust_unknown && options_.expect_fingerprint && *options_.expect_fingerprint != host_key_.fingerprint)
    return std::unexpected(make_error(Errc::kHostKeyUnknown, "host " + name + " offered " + offered.type + " key " +
                                                                 host_key_.fingerprint + ", not the expected " +
                                                                 *options_.expect_fingerprint + "; nothing recorded"));
  bool record = options_.trust_unknown || host_.strict_host_key_checking != StrictHostKeyChecking::kYes;
  if (!record)
    return std::unexpected(make_error(
        Errc::kHostKeyUnknown, "host " + name + " is not in known_hosts; it offered " + offered.type + " key " +
                                   host_key_.fingerprint + ". Check that fingerprint with the box's provider, then run: ferry trust " +
                                   host_.alias + " (or set \"StrictHostKeyChecking accept-new\" for this Host in your ssh config)"));
  if (host_.user_known_hosts_files.empty()) return {};
  const auto& file = host_.user_known_hosts_files.front();
  if (auto a = append_known_host(file, host_.hostname, host_.port, offered); !a)
    return std::unexpected(make_error(Errc::kHostKeyUnknown, "cannot record the host key: " + a.error()));
  host_key_.newly_recorded = true;
  host_key_.recorded_in = file;
  spdlog::info("recorded host key {} {} for {} in {}", offered.type, host_key_.fingerprint, name, file);
  return {};
}

asio::awaitable<Result<std::shared_ptr<Session>>> Session::connect(Executor executor, const HostConfig& host,
                                                                   SessionOptions options) {
  if (host.proxy_command)
    co_return std::unexpected(make_error(Errc::kUnsupported, "ProxyCommand (" + *host.proxy_command +
                                                                 ") is not supported by ferry; use ProxyJump"));
  std::chrono::milliseconds connect_timeout =
      host.connect_timeout_s ? std::chrono::milliseconds(*host.connect_timeout_s * 1000) : options.connect_timeout;

  std::shared_ptr<Session> previous;
  std::vector<HostConfig> chain = host.proxy_jump;
  chain.push_back(host);
  chain.back().proxy_jump.clear();
  for (std::size_t i = 0; i < chain.size(); ++i) {
    const HostConfig& hop = chain[i];
    auto deadline = Clock::now() + connect_timeout;
    // `ferry trust` vouches for the host it names; the hops keep their own StrictHostKeyChecking.
    SessionOptions hop_options = options;
    if (i + 1 < chain.size()) {
      hop_options.trust_unknown = false;
      hop_options.expect_fingerprint.reset();
    }
    std::shared_ptr<Session> s(new Session(executor, hop, hop_options));
    if (!previous) {
      auto c = co_await s->connect_tcp(deadline);
      if (!c) co_return std::unexpected(c.error());
    } else {
      auto ch = co_await previous->open_direct_tcpip(hop.hostname, hop.port, deadline);
      if (!ch) {
        co_return std::unexpected(make_error(Errc::kConnectFailed, "connecting to " + describe(hop) + " through " +
                                                                       describe(previous->host()) + ": " + ch.error().message));
      }
      net::NativeSocket sv[2];
      if (const int e = net::socket_pair(sv); e != 0)
        co_return std::unexpected(make_error(Errc::kConnectFailed, std::string("socket pair failed: ") + std::strerror(e)));
      boost::system::error_code ec;
      auto end = std::make_shared<StreamSocket>(adopt_stream_socket(executor, sv[1], ec));
      if (ec) {
        net::socket_close(sv[0]);
        co_return std::unexpected(make_error(Errc::kConnectFailed, "socket pair: " + ec.message()));
      }
      auto a = s->attach_socket(sv[0]);
      if (!a) co_return std::unexpected(a.error());
      previous->start_bridge(*ch, end, 256 << 10, [] {});
      s->jump_ = previous;
    }
    auto h = co_await s->handshake(deadline);
    if (!h) co_return std::unexpected(h.error());
    if (auto k = s->check_host_key(); !k) co_return std::unexpected(k.error());
    if (options.host_key_only && i + 1 == chain.size()) co_return s;
    auto auth = co_await s->authenticate(Clock::now() + options.auth_timeout);
    if (!auth) co_return std::unexpected(auth.error());
    spdlog::debug("ssh: authenticated to {} with {}", describe(hop), s->authenticated_with());
    previous = std::move(s);
  }
  co_return previous;
}

}  // namespace ferry::ssh
