// Running the interpreter probe on the box: over the SSH link's exec channel, or as a local
// process for host "local" (see env_probe.hpp).
#include <sys/wait.h>

#include <cstdio>

#include "helper/env/env_probe.hpp"
#include "helper/remote/endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"

namespace ferry::env {

std::expected<EnvInfo, Error> probe_env(remote::Endpoint& endpoint, const std::string& interpreter_in, bool with_torch,
                                       std::chrono::milliseconds timeout) {
  const std::string interpreter = interpreter_in.empty() ? "python3" : interpreter_in;
  const std::string command = probe_command(interpreter, with_torch);
  const std::string fix = " (set \"interpreter\" in ferry.json to the box's Python 3, e.g. \"/opt/conda/bin/python\")";
  std::string out, err;
  int status = 0;
  if (auto* ssh = dynamic_cast<remote::SshEndpoint*>(&endpoint)) {
    auto r = ssh->exec(command, timeout);
    if (!r) return std::unexpected(remote::call_error(r.error(), "asking " + interpreter + " on " + endpoint.description() + ": " + r.error().message));
    out = std::move(r->out);
    err = std::move(r->err);
    status = r->exit_status;
  } else {
    // Host "local": the box is this machine.
    FILE* pipe = ::popen((command + " 2>/dev/null").c_str(), "r");
    if (!pipe) return std::unexpected(Error{ErrorKind::io, "cannot start " + interpreter + " locally"});
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
    status = ::pclose(pipe);
    status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  auto info = parse_probe_output(out, interpreter);
  if (info) return std::move(*info);
  std::string why = status == 127 ? interpreter + " was not found on " + endpoint.description()
                                  : interpreter + " on " + endpoint.description() + " did not answer the probe (exit " +
                                        std::to_string(status) + "): " + info.error();
  if (!err.empty()) why += "; it said: " + err.substr(0, 400);
  // The interpreter ferry.json names is not the box's Python 3 (parse_probe_output only checks
  // its report, and keeps string errors): invalid_project, fixed in ferry.json.
  return std::unexpected(Error{ErrorKind::invalid_project, why + fix});
}

}  // namespace ferry::env
