// Running the interpreter probe on the box: over the SSH link's exec channel, or as a local
// process for host "local" (see env_probe.hpp). Neither hands ferry.json's interpreter to a
// shell as text: locally it is an argv, over SSH each of its words is quoted.
#include <cstdlib>

#include "common/user_dirs.hpp"
#include "helper/env/env_probe.hpp"
#include "helper/env/local_command.hpp"
#include "helper/remote/endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"

namespace ferry::env {

namespace {

// What the box's shell does to a leading "~/" (probe_command leaves it to it), done here.
std::vector<std::string> with_home(std::vector<std::string> argv) {
  const auto home = platform::home_dir();
  if (!home) return argv;
  for (auto& word : argv)
    if (word == "~" || word.starts_with("~/")) word = home->string() + word.substr(1);
  return argv;
}

}  // namespace

std::expected<EnvInfo, Error> probe_env(remote::Endpoint& endpoint, const std::string& interpreter_in, bool with_torch,
                                       std::chrono::milliseconds timeout) {
  const std::string interpreter = interpreter_in.empty() ? "python3" : interpreter_in;
  const std::string fix = " (set \"interpreter\" in ferry.json to the box's Python 3, e.g. \"/opt/conda/bin/python\")";
  // The interpreter ferry.json names cannot be run, or is not the box's Python 3: invalid_project,
  // fixed in ferry.json (parse_probe_output only checks its report, and keeps string errors).
  auto refused = [&](const std::string& why) { return std::unexpected(Error{ErrorKind::invalid_project, why + fix}); };
  auto argv = probe_argv(interpreter, with_torch);
  if (!argv) return refused("the interpreter \"" + interpreter + "\" could not be run: " + argv.error());
  std::string out, err;
  int status = 0;
  if (auto* ssh = dynamic_cast<remote::SshEndpoint*>(&endpoint)) {
    auto r = ssh->exec(*probe_command(interpreter, with_torch), timeout);
    if (!r) return std::unexpected(remote::call_error(r.error(), "asking " + interpreter + " on " + endpoint.description() + ": " + r.error().message));
    out = std::move(r->out);
    err = std::move(r->err);
    status = r->exit_status;
  } else {
    // Host "local": the box is this machine. cd / as probe_command does.
    auto r = run_local_command(with_home(std::move(*argv)), "/", timeout);
    if (!r) return refused("the interpreter \"" + interpreter + "\" could not be run on " + endpoint.description() + ": " + r.error());
    out = std::move(r->out);
    err = std::move(r->err);
    status = r->exit_status;
  }
  auto info = parse_probe_output(out, interpreter);
  if (info) return std::move(*info);
  std::string why = status == 127 ? "the interpreter \"" + interpreter + "\" could not be run: it was not found on " + endpoint.description()
                                  : interpreter + " on " + endpoint.description() + " did not answer the probe (exit " +
                                        std::to_string(status) + "): " + info.error();
  if (!err.empty()) why += "; it said: " + err.substr(0, 400);
  return refused(why);
}

}  // namespace ferry::env
