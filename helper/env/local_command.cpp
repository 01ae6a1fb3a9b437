// Running a program from its argv on this machine: see local_command.hpp.
#include "helper/env/local_command.hpp"

#include <filesystem>

#include "common/process.hpp"

namespace ferry::env {

namespace {

constexpr std::size_t kErrKept = 64 * 1024;

}  // namespace

std::expected<LocalOutput, std::string> run_local_command(const std::vector<std::string>& argv, const std::string& cwd,
                                                         std::chrono::milliseconds timeout) {
  if (argv.empty() || argv.front().empty()) return std::unexpected(std::string("no program to run"));
  // In a process group of its own (the launcher's), so a timeout ends whatever it started too.
  platform::ProcessSpec spec;
  spec.argv = argv;
  spec.search_path = true;
  spec.cwd = std::filesystem::path(std::u8string(cwd.begin(), cwd.end()));
  spec.in = platform::Stdio::null;
  auto r = platform::run_captured(std::move(spec), timeout, kErrKept);
  if (!r) return std::unexpected(r.error());
  if (!r->status)
    return std::unexpected("'" + argv.front() + "' did not finish within " +
                           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) + " s");
  return LocalOutput{std::move(r->out), std::move(r->err), r->status->code()};
}

}  // namespace ferry::env
