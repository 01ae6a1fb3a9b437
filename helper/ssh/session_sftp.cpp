// Session::sftp_write_file: one file written over SFTP (the agent's upload).
#include <utility>  // before asio on GCC 12

#include <algorithm>
#include <optional>

#include <libssh2_sftp.h>

#include "helper/ssh/session.hpp"
#include "helper/ssh/session_internal.hpp"

namespace ferry::ssh {

asio::awaitable<Result<void>> Session::sftp_write_file(std::string remote_path, std::span<const char> data, int mode,
                                                       Clock::time_point deadline) {
  std::string what = "uploading " + remote_path + " over SFTP";
  Result<LIBSSH2_SFTP*> sftp = std::unexpected(Error{});
  {
    if (auto turn = co_await lock_open(deadline); !turn) co_return std::unexpected(turn.error());
    OpenTurn turn(*this);
    sftp = co_await retry_ptr<LIBSSH2_SFTP>(*this, [&] { return libssh2_sftp_init(session_); }, deadline, what);
  }
  if (!sftp) co_return std::unexpected(sftp.error());
  auto sftp_error = [&](std::string_view step) {
    unsigned long code = libssh2_sftp_last_error(*sftp);
    return make_error(Errc::kRemoteFailed, what + ": " + std::string(step) + " failed (SFTP status " + std::to_string(code) + ")");
  };
  auto handle = co_await retry_ptr<LIBSSH2_SFTP_HANDLE>(
      *this,
      [&] {
        return libssh2_sftp_open_ex(*sftp, remote_path.c_str(), static_cast<unsigned>(remote_path.size()),
                                    LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_TRUNC, mode, LIBSSH2_SFTP_OPENFILE);
      },
      deadline, what);
  if (!handle) {
    auto err = libssh2_session_last_errno(session_) == LIBSSH2_ERROR_SFTP_PROTOCOL ? sftp_error("open") : handle.error();
    co_await retry(*this, [&] { return static_cast<long>(libssh2_sftp_shutdown(*sftp)); }, deadline, what);
    co_return std::unexpected(err);
  }
  std::size_t off = 0;
  std::optional<Error> failure;
  while (off < data.size()) {
    // libssh2 pipelines SFTP writes: after EAGAIN the same buffer must be passed again.
    std::size_t chunk = std::min<std::size_t>(data.size() - off, 1 << 20);
    auto r = co_await retry(*this, [&] { return static_cast<long>(libssh2_sftp_write(*handle, data.data() + off, chunk)); },
                            deadline, what);
    if (!r) {
      failure = r.error();
      break;
    }
    off += static_cast<std::size_t>(*r);
  }
  auto c = co_await retry(*this, [&] { return static_cast<long>(libssh2_sftp_close_handle(*handle)); }, deadline, what);
  if (!failure && !c) failure = c.error();
  co_await retry(*this, [&] { return static_cast<long>(libssh2_sftp_shutdown(*sftp)); }, deadline, what);
  if (failure) co_return std::unexpected(*failure);
  co_return Result<void>{};
}

}  // namespace ferry::ssh
