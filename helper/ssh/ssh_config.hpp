// OpenSSH client config (ssh_config(5)) parsing and host resolution, as `ssh -G` resolves a
// destination: Host blocks with patterns, first value wins, IdentityFile accumulates, Include.
// Pure apart from reading the config files themselves.
#pragma once

#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::ssh {

enum class StrictHostKeyChecking { kYes, kAcceptNew, kNo };

std::string_view to_string(StrictHostKeyChecking mode);

// A destination as written by the user: "alias", "user@host", "host:port", "user@host:port",
// "[v6addr]:port" or "ssh://user@host:port".
struct Destination {
  std::optional<std::string> user;
  std::string host;
  std::optional<int> port;
};

std::expected<Destination, std::string> parse_destination(std::string_view text);

// Everything ferry needs to reach a host; the result of resolving an alias.
struct HostConfig {
  std::string alias;     // the name the user asked for
  std::string hostname;  // HostName (tokens expanded), else the alias
  std::string user;      // User, else the local user
  int port = 22;
  std::vector<std::string> identity_files;  // expanded (~, %h, %u, %r, %d, %p, %n, %%)
  bool identity_files_explicit = false;     // false when these are OpenSSH's defaults
  bool identities_only = false;
  std::vector<std::string> user_known_hosts_files;  // expanded
  std::vector<std::string> global_known_hosts_files;
  StrictHostKeyChecking strict_host_key_checking = StrictHostKeyChecking::kYes;
  // ProxyJump hops in connection order, each resolved through the config; empty = direct. The
  // first hop's own ProxyJump is followed (flattened in front); later hops are reached through
  // the previous one, as `ssh -J` does.
  std::vector<HostConfig> proxy_jump;
  std::optional<std::string> proxy_command;  // recorded so connect can refuse it clearly
  std::optional<int> connect_timeout_s;
  int server_alive_interval_s = 0;  // 0 = OpenSSH default (off); ferry applies its own default
  int server_alive_count_max = 3;
};

struct ConfigParseError {
  std::string file;
  int line = 0;  // 0 when the error is not tied to a line
  std::string message;
  std::string to_string() const;  // "FILE:LINE: message"
};

// What the resolver needs from the machine; tests fill it in.
struct LocalContext {
  std::string local_user;      // %u and the default User
  std::filesystem::path home;  // ~ and %d
};

LocalContext current_local_context();

// The default config file: ~/.ssh/config.
std::filesystem::path default_config_path(const LocalContext& local);

// Resolves `destination` against the config at `config_file` (a missing default file is not an
// error: every value takes its default). user/port written in the destination override the config,
// as `ssh user@alias -p N` does. Malformed config lines are errors naming file and line.
std::expected<HostConfig, ConfigParseError> resolve_host(const Destination& destination,
                                                         const std::filesystem::path& config_file,
                                                         const LocalContext& local,
                                                         bool config_file_required = false);

// Convenience: parse_destination, then resolve_host with the current local context.
std::expected<HostConfig, ConfigParseError> resolve_host(std::string_view destination,
                                                         const std::optional<std::string>& config_file);

// What a config says about a bare name, for editors checking ferry.json's host: `named` when a
// Host line that could apply (Include followed, as resolve_host does) matches it through a
// pattern that is more than wildcards ("gpu-*" names "gpu-1"; "*" names nothing), and every
// literal Host name, for "did you mean". Malformed lines are errors, as in resolve_host.
struct HostAliasLookup {
  bool named = false;
  std::vector<std::string> names;
};

// config_file as ferry.json's sshConfig or -F (~ expanded; must be readable); nullopt reads
// ~/.ssh/config of `local`, which may be missing.
std::expected<HostAliasLookup, ConfigParseError> lookup_host_alias(std::string_view alias,
                                                                   const std::optional<std::string>& config_file,
                                                                   const LocalContext& local);

// Host pattern matching as ssh_config(5) "PATTERNS": `*`, `?`, comma/space lists, `!` negation.
bool match_pattern(std::string_view pattern, std::string_view text);
bool match_pattern_list(const std::vector<std::string>& patterns, std::string_view host);

// "user@host:port" (user and :port only when needed) for messages and known_hosts.
std::string describe(const HostConfig& host);

}  // namespace ferry::ssh
