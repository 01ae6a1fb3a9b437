// Children in their own process group: see spawn.hpp.
#include "common/posix/spawn.hpp"

#include <signal.h>

extern char** environ;

namespace ferry::posix {

pid_t spawn_in_own_group(const std::vector<std::string>& argv, const posix_spawn_file_actions_t* actions, bool search_path,
                         int& error) {
  if (argv.empty()) {
    error = EINVAL;
    return -1;
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  error = search_path ? ::posix_spawnp(&pid, argv.front().c_str(), actions, &attr, args.data(), environ)
                      : ::posix_spawn(&pid, argv.front().c_str(), actions, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  return error == 0 ? pid : -1;
}

}  // namespace ferry::posix
