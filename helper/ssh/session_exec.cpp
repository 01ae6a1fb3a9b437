// Session::open_exec and exec: remote commands on session channels, their receive windows sized
// to the link.
#include <utility>  // before asio on GCC 12

#include "helper/ssh/session.hpp"
#include "helper/ssh/session_internal.hpp"

namespace ferry::ssh {

asio::awaitable<Result<std::shared_ptr<Channel>>> Session::open_exec(std::string command, Clock::time_point deadline) {
  if (auto turn = co_await lock_open(deadline); !turn) co_return std::unexpected(turn.error());
  OpenTurn turn(*this);
  const auto started = Clock::now();
  auto ch = co_await retry_ptr<LIBSSH2_CHANNEL>(
      *this, [&] { return libssh2_channel_open_session(session_); }, deadline, "opening a session channel");
  if (!ch) co_return std::unexpected(ch.error());
  note_open_time(started);
  auto channel = std::make_shared<Channel>(shared_from_this(), *ch);
  // Exec channels carry the agent's replies (pulls): their window grows to the link's
  // bandwidth-delay product with the first read, once this very open has timed the link (a warm
  // connect opens no channel before the agent's).
  channel->set_window_target(receive_window(LIBSSH2_CHANNEL_WINDOW_DEFAULT));
  auto r = co_await retry(
      *this,
      [&] {
        return static_cast<long>(libssh2_channel_process_startup(*ch, "exec", 4, command.data(),
                                                                 static_cast<unsigned>(command.size())));
      },
      deadline, "starting the remote command");
  if (!r) co_return std::unexpected(r.error());
  co_return channel;
}

asio::awaitable<Result<ExecResult>> Session::exec(std::string command, Clock::time_point deadline, std::string input) {
  auto ch = co_await open_exec(std::move(command), deadline);
  if (!ch) co_return std::unexpected(ch.error());
  if (!input.empty()) {
    auto w = co_await (*ch)->write_all(input, deadline);
    if (!w) co_return std::unexpected(w.error());
  }
  auto e = co_await (*ch)->send_eof(deadline);
  if (!e) co_return std::unexpected(e.error());
  co_return co_await (*ch)->collect(deadline);
}

}  // namespace ferry::ssh
