// Errors of the SSH layer: libssh2 return codes become std::error_code here, and ferry's own
// conditions (host key refused, auth failed, timeout) get their own category.
#pragma once

#include <string>
#include <system_error>

namespace ferry::ssh {

enum class Errc {
  kTimeout = 1,
  kConnectFailed,
  kHostKeyUnknown,
  kHostKeyChanged,
  kHostKeyRevoked,
  kAuthFailed,
  kClosed,      // the session or channel is gone (closed by us, the peer, or the keepalive)
  kLinkDead,    // keepalives went unanswered
  kUnsupported, // e.g. ProxyCommand
  kRemoteFailed,  // a remote command failed
  kInterrupted,   // a blocked read was woken on purpose
};

const std::error_category& ssh_category();
const std::error_category& libssh2_category();

inline std::error_code make_error_code(Errc e) { return {static_cast<int>(e), ssh_category()}; }
// A negative LIBSSH2_ERROR_* code.
inline std::error_code libssh2_error(int rc) { return {rc, libssh2_category()}; }

// What went wrong, for people: the code for programs, the message says what was being attempted.
struct Error {
  std::error_code code;
  std::string message;
};

inline Error make_error(Errc e, std::string message) { return Error{make_error_code(e), std::move(message)}; }

}  // namespace ferry::ssh

template <>
struct std::is_error_code_enum<ferry::ssh::Errc> : std::true_type {};
