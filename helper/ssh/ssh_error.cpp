// Error categories for the SSH layer (see ssh_error.hpp).
#include "helper/ssh/ssh_error.hpp"

#include <libssh2.h>

namespace ferry::ssh {
namespace {

class SshCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "ferry.ssh"; }
  std::string message(int c) const override {
    switch (static_cast<Errc>(c)) {
      case Errc::kTimeout: return "timed out";
      case Errc::kConnectFailed: return "connection failed";
      case Errc::kHostKeyUnknown: return "host key unknown";
      case Errc::kHostKeyChanged: return "host key changed";
      case Errc::kHostKeyRevoked: return "host key revoked";
      case Errc::kAuthFailed: return "authentication failed";
      case Errc::kClosed: return "connection closed";
      case Errc::kLinkDead: return "link dead (keepalives unanswered)";
      case Errc::kUnsupported: return "not supported";
      case Errc::kRemoteFailed: return "remote command failed";
      case Errc::kInterrupted: return "interrupted";
    }
    return "unknown ssh error";
  }
};

class Libssh2Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "libssh2"; }
  std::string message(int c) const override {
    switch (c) {
      case LIBSSH2_ERROR_SOCKET_DISCONNECT: return "socket disconnected";
      case LIBSSH2_ERROR_SOCKET_SEND: return "socket send failed";
      case LIBSSH2_ERROR_SOCKET_RECV: return "socket receive failed";
      case LIBSSH2_ERROR_KEX_FAILURE: return "key exchange failed";
      case LIBSSH2_ERROR_HOSTKEY_INIT: return "host key init failed";
      case LIBSSH2_ERROR_AUTHENTICATION_FAILED: return "authentication failed";
      case LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED: return "public key unverified";
      case LIBSSH2_ERROR_FILE: return "key file unreadable or passphrase wrong";
      case LIBSSH2_ERROR_CHANNEL_FAILURE: return "channel request refused";
      case LIBSSH2_ERROR_CHANNEL_CLOSED: return "channel closed";
      case LIBSSH2_ERROR_CHANNEL_EOF_SENT: return "channel EOF already sent";
      case LIBSSH2_ERROR_SFTP_PROTOCOL: return "SFTP error";
      case LIBSSH2_ERROR_METHOD_NONE: return "no common algorithm with the server";
      case LIBSSH2_ERROR_TIMEOUT: return "timeout";
      case LIBSSH2_ERROR_EAGAIN: return "would block";
      default: return "libssh2 error " + std::to_string(c);
    }
  }
};

}  // namespace

const std::error_category& ssh_category() {
  static SshCategory c;
  return c;
}
const std::error_category& libssh2_category() {
  static Libssh2Category c;
  return c;
}

}  // namespace ferry::ssh
