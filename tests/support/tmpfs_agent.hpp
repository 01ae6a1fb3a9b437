// ferry-agent behind a wrapper script that gives it a tmpfs of its own, in a user + mount
// namespace of its own (util-linux's `unshare --user --map-root-user --mount`): mounted at the
// agent's --root (a box whose disk is small and fills up) or at a directory inside the root
// (another filesystem under the mapping). Only the agent sees the mount; nothing of this machine's
// mounts changes. Needs unprivileged user namespaces (or root): tmpfs_agent_unavailable() says
// why not, for a test's precondition. Header-only.
#pragma once

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace ferry::test {

// nullopt when a private tmpfs can be had here; else the reason (for the test log).
inline std::optional<std::string> tmpfs_agent_unavailable() {
  static const std::optional<std::string> why = []() -> std::optional<std::string> {
    int rc = std::system("unshare --user --map-root-user --mount sh -c "
                         "'d=$(mktemp -d) && mount -t tmpfs -o size=64k ferry-test \"$d\"; r=$?; umount \"$d\" 2>/dev/null;"
                         " rmdir \"$d\"; exit $r' >/dev/null 2>&1");
    if (rc == 0) return std::nullopt;
    return std::string("no private tmpfs here: `unshare --user --map-root-user --mount` + `mount -t tmpfs` failed "
                       "(util-linux missing, or unprivileged user namespaces disabled and not root)");
  }();
  return why;
}

// Writes `dir`/agent-on-tmpfs.sh: runs `agent` with its arguments after mounting a tmpfs of
// `size` (mount's syntax: "1m", "512k") at its --root, or at --root/`mount_at` when given, then
// running `setup` (a shell snippet without single quotes; $T is the mount point) inside the
// namespace.
inline std::filesystem::path write_tmpfs_agent(const std::filesystem::path& dir, const std::filesystem::path& agent,
                                               const std::string& size, const std::string& mount_at = "",
                                               const std::string& setup = "") {
  const auto script = dir / "agent-on-tmpfs.sh";
  std::ofstream out(script, std::ios::trunc);
  out << "#!/bin/sh\n"
         "# ferry-agent --root DIR ...: DIR (or DIR/" << mount_at << ") becomes a private tmpfs of " << size << ".\n"
         "exec unshare --user --map-root-user --mount sh -c '\n"
         "  T=\"$2\"" << (mount_at.empty() ? "" : "/" + mount_at) << "\n"
         "  mkdir -p \"$T\" && mount -t tmpfs -o size=" << size << " ferry-test \"$T\" || exit 97\n"
         "  " << setup << "\n"
         "  exec \"$0\" \"$@\"' '" << agent.string() << "' \"$@\"\n";
  out.close();
  ::chmod(script.c_str(), 0755);
  return script;
}

}  // namespace ferry::test
