// The stream transport of `ferry serve`: reads LSP-framed bodies from one fd on the calling
// thread, hands them to a Dispatcher, runs worker handlers on a pool and writes replies through
// one OutputChannel. Returns when the peer sends `exit`, closes the stream, or sends an
// unreadable frame (or one whose body is too big to skip); every started handler has finished
// by then.
#pragma once

#include <chrono>
#include <cstddef>

#include "protocol/binding_table.hpp"
#include "protocol/codec.hpp"
#include "protocol/framing.hpp"
#include "protocol/outgoing_requests.hpp"

namespace ferry::server {

class OutputChannel;

struct TransportOptions {
  protocol::Encoding encoding = protocol::Encoding::json;
  protocol::FrameLimits limits{};
  std::size_t workers = 4;
  bool lsp_lifecycle = true;
  // At EOF, requests still running get this long to answer (a client may close its end and
  // keep reading) before they are cancelled.
  std::chrono::milliseconds eof_grace{2000};
  // Where server -> client requests go out and their responses come back; optional.
  protocol::OutgoingRequests* outgoing = nullptr;
  // The stream's writer when someone else also writes there and outlives this call (a project
  // socket connection's notifications); else serve_stream makes its own.
  OutputChannel* output = nullptr;
};

// The exit status: the `exit` notification's (0 after shutdown, else 1); on EOF 0 after
// shutdown, else 1; 1 after an unreadable frame. After `exit` or an unreadable frame, running
// requests are cancelled at once; after EOF they first get options.eof_grace to finish.
int serve_stream(const protocol::BindingTable& table, int in_fd, int out_fd, const TransportOptions& options = {});

}  // namespace ferry::server
