// What the ferry process sets for itself before anything else runs (main calls it once). POSIX:
// SIGPIPE ignored (every command writes to sockets and pipes whose far end may close at any
// moment: tunnel clients, the agent's stdin, an IDE, `| head`; each write handles EPIPE where it
// happens, where a SIGPIPE would end the process and every other connection with it, issue #17;
// children get the default back), and glibc's heap told to keep freed memory (sync requests
// allocate buffers of megabytes; unmapping each on free made every request pay page faults and
// zeroing). Windows has neither: a write to a closed pipe fails (EPIPE), and its heap keeps
// freed blocks itself; there the standard streams are put in binary mode instead (remote output
// passes through byte for byte).
#pragma once

namespace ferry::platform {

void apply_process_defaults();

}  // namespace ferry::platform
