// Where the user's things are on this system: the home folder, the login name, and the roots
// ferry keeps its config and cache under. POSIX: $HOME, ~/.config and ~/.cache (the XDG
// variables first); Windows: %USERPROFILE%, %APPDATA% and %LOCALAPPDATA% (the XDG variables still
// win when set, as tests set them). Implementations in common/posix/ and common/windows/.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace ferry::platform {

// $HOME (POSIX) or %USERPROFILE% (Windows) when set and absolute, else the system's record
// (the password database; the profile folder). Nothing when neither exists.
std::optional<std::filesystem::path> home_dir();
// The home OpenSSH uses for ~: the password database first on POSIX (as ssh does), the profile
// folder on Windows (as Windows' OpenSSH does).
std::optional<std::filesystem::path> login_home_dir();
// The folder of the system-wide OpenSSH files (ssh_config, ssh_known_hosts): /etc/ssh;
// %PROGRAMDATA%\ssh on Windows, where its OpenSSH keeps them.
std::filesystem::path ssh_system_dir();
// The home of another user (~name): the password database; nothing on Windows.
std::optional<std::filesystem::path> home_of_user(const std::string& name);
// The agent SSH keys are asked of when $SSH_AUTH_SOCK is not set, as the platform's OpenSSH has it:
// none on POSIX; on Windows a description of the two libssh2 then tries itself, Pageant and the
// Windows OpenSSH agent's pipe (\\.\pipe\openssh-ssh-agent).
std::optional<std::string> default_ssh_agent();
// The login name ("" when unknown).
std::string user_name();
// ferry's per-user config root's parent ($XDG_CONFIG_HOME, ~/.config; %APPDATA%), and cache root's
// parent ($XDG_CACHE_HOME, ~/.cache; %LOCALAPPDATA%): callers append "ferry".
std::optional<std::filesystem::path> config_home();
std::optional<std::filesystem::path> cache_home();

}  // namespace ferry::platform
