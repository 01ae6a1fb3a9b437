// Starting and reaping the agent or ssh subprocess: see child_process.hpp.
#include "helper/remote/child_process.hpp"

namespace ferry::remote {

std::expected<ChildProcess::Spawned, std::string> ChildProcess::spawn(const std::vector<std::string>& argv) {
  // A process group of its own (the launcher's): the terminal's Ctrl-C is for ferry, which decides
  // what it means (stop a sync after the requests in flight, escalate to a run); it must not kill
  // the agent, which stands for the remote box. The agent still ends when we do (EOF on its
  // stdin). Our SIGPIPE is ignored (dead agents give EPIPE); the child gets the default back.
  auto started = platform::Process::start({.argv = argv,
                                           .search_path = false,
                                           .cwd = {},
                                           .in = platform::Stdio::pipe,
                                           .out = platform::Stdio::pipe,
                                           .err = platform::Stdio::inherit});
  if (!started) return std::unexpected(started.error());
  process_ = std::move(*started);
  return Spawned{process_.in.release(), process_.out.release()};
}

std::optional<int> ChildProcess::wait_for(std::chrono::milliseconds timeout) {
  auto status = process_.wait_for(timeout);
  if (!status) return std::nullopt;
  return status->native;
}

}  // namespace ferry::remote
