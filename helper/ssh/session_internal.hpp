// Private to helper/ssh's session_*.cpp: the EAGAIN retry loops every libssh2 call goes through,
// and the channel-open turn. Includes libssh2.h, so it stays out of public headers.
#pragma once

#include <utility>  // before asio on GCC 12

#include <string>
#include <string_view>

#include <libssh2.h>

#include "helper/ssh/session.hpp"

namespace ferry::ssh {

inline Error timeout_error(std::string_view what) { return make_error(Errc::kTimeout, std::string(what) + ": timed out"); }

// Repeats `call` while libssh2 says EAGAIN, waiting for the socket in between.
template <class F>
asio::awaitable<Result<long>> retry(Session& s, F call, Clock::time_point deadline, std::string_view what) {
  for (;;) {
    if (!s.is_open()) co_return std::unexpected(make_error(Errc::kClosed, std::string(what) + ": " + s.close_reason()));
    s.finish_pending_adjust();
    long rc = call();
    // BAD_USE: another coroutine's packet is half sent; its owner finishes it when the socket
    // drains, so this call waits for that like for EAGAIN.
    if (rc == LIBSSH2_ERROR_BAD_USE || s.spurious_send_error(rc)) rc = LIBSSH2_ERROR_EAGAIN;
    if (rc != LIBSSH2_ERROR_EAGAIN) {
      if (rc < 0) co_return std::unexpected(s.last_error(what));
      co_return rc;
    }
    auto w = co_await s.wait_socket(deadline, what);
    if (!w) co_return std::unexpected(w.error());
  }
}

// The same for calls that return a pointer and report EAGAIN through the session's errno.
template <class T, class F>
asio::awaitable<Result<T*>> retry_ptr(Session& s, F call, Clock::time_point deadline, std::string_view what) {
  for (;;) {
    if (!s.is_open()) co_return std::unexpected(make_error(Errc::kClosed, std::string(what) + ": " + s.close_reason()));
    s.finish_pending_adjust();
    T* p = call();
    if (p) co_return p;
    int e = libssh2_session_last_errno(s.raw());
    if (e != LIBSSH2_ERROR_EAGAIN && e != LIBSSH2_ERROR_BAD_USE) co_return std::unexpected(s.last_error(what));
    auto w = co_await s.wait_socket(deadline, what);
    if (!w) co_return std::unexpected(w.error());
  }
}

// Releases the session's channel-open turn when the opening coroutine leaves its scope.
class OpenTurn {
 public:
  explicit OpenTurn(Session& s) : s_(&s) {}
  ~OpenTurn() { s_->unlock_open(); }
  OpenTurn(const OpenTurn&) = delete;
  OpenTurn& operator=(const OpenTurn&) = delete;

 private:
  Session* s_;
};

}  // namespace ferry::ssh
