// The few socket calls ferry makes itself, below Asio (libssh2's I/O hooks, half-closes of bridged
// sockets, the ProxyJump socket pair), for POSIX sockets and Winsock alike: one native handle type,
// errors as errno values (a would-block is always EAGAIN), no SIGPIPE. Implementations in
// common/posix/ and common/windows/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ferry::net {

#ifdef _WIN32
using NativeSocket = std::uintptr_t;  // SOCKET
inline constexpr NativeSocket kNoSocket = ~NativeSocket{0};
#else
using NativeSocket = int;
inline constexpr NativeSocket kNoSocket = -1;
#endif

// recv(2)/send(2): the count moved, 0 at end of stream (recv), or minus an errno value (EAGAIN when
// the socket would block). send never raises SIGPIPE; `dont_wait` makes this one call non-blocking
// on a blocking socket.
std::ptrdiff_t socket_recv(NativeSocket s, void* buffer, std::size_t length, int flags = 0);
std::ptrdiff_t socket_send(NativeSocket s, const void* buffer, std::size_t length, bool dont_wait = false);

enum class ShutdownHow { read, write, both };
void socket_shutdown(NativeSocket s, ShutdownHow how);
void socket_close(NativeSocket s);
// Not inherited by children ferry starts.
void socket_no_inherit(NativeSocket s);
// Acknowledge received data at once rather than with the delayed ACK (Linux's TCP_QUICKACK, asked
// again after each read; elsewhere nothing).
void socket_quick_ack(NativeSocket s);
// Whether everything sent has left the send queue (false when the query fails; on Windows, which
// cannot tell, true: its send buffers grow on demand, so a small packet does not stall there).
bool socket_send_queue_empty(NativeSocket s);
// The address family (AF_INET, AF_INET6, AF_UNIX) the socket was made with; -1 when it is no socket.
int socket_family(NativeSocket s);
// A second handle to the same socket (dup(2); WSADuplicateSocket), kNoSocket on failure.
NativeSocket socket_duplicate(NativeSocket s);
// A TCP socket listening on the loopback address (::1 when `v6`, else 127.0.0.1) at `port` (0: any
// free one), not inherited, bound exclusively (no other socket may take the port meanwhile);
// kNoSocket with `error` set (EADDRINUSE when the port is taken).
NativeSocket listen_loopback(bool v6, int port, int& error);
// The local port of a bound socket (0 when unknown).
int socket_local_port(NativeSocket s);
// "pid 1234 (python3)" for the process listening on a TCP port here, or "" if unknown.
std::string port_holder(int port);
// The next connection on a listening socket (blocking), not inherited; kNoSocket on an error.
NativeSocket socket_accept(NativeSocket listener);
// A blocking TCP connection to host:port (the name resolved here, each address tried), not
// inherited; kNoSocket when none answers.
NativeSocket connect_tcp(const std::string& host, int port);
// Small writes leave at once (TCP_NODELAY): a relayed keystroke or request does not wait for more.
void socket_no_delay(NativeSocket s);
// Blocks until one of `sockets` has something to read (a listener: a connection to accept), the
// peer hung up, or it failed: the index of the first such, or -1 when the wait itself failed.
int wait_readable(std::span<const NativeSocket> sockets);
// Two connected stream sockets (a Unix socket pair; on Windows two ends of a loopback TCP
// connection). 0, or an errno value.
int socket_pair(NativeSocket (&ends)[2]);

}  // namespace ferry::net
