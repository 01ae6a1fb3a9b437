// OpenSSH client config parsing and host resolution (see ssh_config.hpp).
#include "helper/ssh/ssh_config.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/path_glob.hpp"
#include "common/user_dirs.hpp"

namespace ferry::ssh {
namespace {

constexpr int kMaxIncludeDepth = 16;
constexpr int kMaxJumpDepth = 8;

std::string lower(std::string_view s) {
  std::string out(s);
  std::ranges::transform(out, out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Splits a config line into keyword and arguments: "Key value", "Key=value", double quotes group.
std::expected<std::vector<std::string>, std::string> tokenize(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  auto skip_ws = [&] {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
  };
  skip_ws();
  // Keyword: ends at whitespace or '='.
  std::size_t start = i;
  while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '=' && line[i] != '\r') ++i;
  out.emplace_back(line.substr(start, i - start));
  skip_ws();
  if (i < line.size() && line[i] == '=') {
    ++i;
    skip_ws();
  }
  while (i < line.size()) {
    if (line[i] == '#') break;  // a trailing comment after the arguments
    std::string arg;
    if (line[i] == '"') {
      auto end = line.find('"', i + 1);
      if (end == std::string_view::npos) return std::unexpected("unterminated quote");
      arg = std::string(line.substr(i + 1, end - i - 1));
      i = end + 1;
      if (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
        return std::unexpected("text directly after a closing quote");
    } else {
      std::size_t s = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
      arg = std::string(line.substr(s, i - s));
    }
    out.push_back(std::move(arg));
    skip_ws();
  }
  return out;
}

// OpenSSH's convtime: "90", "1m30s", "2h"; plain numbers are seconds.
std::optional<int> parse_time(std::string_view text) {
  if (text.empty()) return std::nullopt;
  long total = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t s = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (s == i) return std::nullopt;
    long value = 0;
    if (std::from_chars(text.data() + s, text.data() + i, value).ec != std::errc{}) return std::nullopt;
    long mult = 1;
    if (i < text.size()) {
      switch (std::tolower(static_cast<unsigned char>(text[i]))) {
        case 's': mult = 1; break;
        case 'm': mult = 60; break;
        case 'h': mult = 3600; break;
        case 'd': mult = 86400; break;
        case 'w': mult = 604800; break;
        default: return std::nullopt;
      }
      ++i;
    }
    total += value * mult;
    if (total > 0x7fffffff) return std::nullopt;
  }
  return static_cast<int>(total);
}

std::optional<int> parse_int(std::string_view text) {
  int value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || p != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<bool> parse_yes_no(std::string_view text) {
  auto v = lower(text);
  if (v == "yes" || v == "true") return true;
  if (v == "no" || v == "false") return false;
  return std::nullopt;
}

std::string expand_tilde(const std::string& path, const LocalContext& local) {
  if (path == "~") return local.home.string();
  if (path.starts_with("~/") || path.starts_with("~\\")) return (local.home / path.substr(2)).string();
  if (path.starts_with("~")) {
    auto slash = path.find('/');
    std::string name = path.substr(1, slash == std::string::npos ? std::string::npos : slash - 1);
    if (auto home = platform::home_of_user(name)) {
      std::string rest = slash == std::string::npos ? "" : path.substr(slash);
      return home->string() + rest;
    }
  }
  return path;
}

struct TokenValues {
  std::string alias, hostname, remote_user, local_user, home;
  int port = 22;
};

std::expected<std::string, std::string> expand_tokens(const std::string& text, const TokenValues& v,
                                                      std::string_view allowed) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 1 >= text.size()) return std::unexpected("'%' at the end of \"" + text + "\"");
    char t = text[++i];
    if (t == '%') {
      out += '%';
      continue;
    }
    if (allowed.find(t) == std::string_view::npos)
      return std::unexpected(std::string("unsupported token %") + t + " in \"" + text + "\"");
    switch (t) {
      case 'h': out += v.hostname; break;
      case 'n': out += v.alias; break;
      case 'r': out += v.remote_user; break;
      case 'u': out += v.local_user; break;
      case 'd': out += v.home; break;
      case 'p': out += std::to_string(v.port); break;
      default: break;
    }
  }
  return out;
}

// Values as they are first seen; resolution fills in defaults afterwards.
struct Collected {
  std::optional<std::string> hostname, user, proxy_jump, proxy_command;
  std::optional<int> port, connect_timeout, alive_interval, alive_count;
  std::optional<bool> identities_only;
  std::optional<StrictHostKeyChecking> strict;
  std::optional<std::vector<std::string>> known_hosts, global_known_hosts;
  std::vector<std::string> identity_files;
  // Raw file:line of IdentityFile entries so token errors can name them.
};

struct Parser {
  const LocalContext& local;
  std::string alias;  // what Host patterns match against
  std::filesystem::path ssh_dir;
  Collected c;
  HostAliasLookup* lookup = nullptr;  // set by lookup_host_alias: Host lines are recorded there

  // never_match: the file was included from a block that does not apply, so nothing in it may
  // apply either (OpenSSH's SSHCONF_NEVERMATCH).
  std::expected<void, ConfigParseError> read_file(const std::filesystem::path& path, bool& active, int depth,
                                                  bool required, bool never_match = false) {
    std::ifstream in(path);
    if (!in) {
      if (required) return std::unexpected(ConfigParseError{path.string(), 0, "cannot be read"});
      return {};
    }
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      auto r = process_line(path, number, line, active, depth, never_match);
      if (!r) return r;
    }
    return {};
  }

  ConfigParseError error(const std::filesystem::path& file, int line, std::string message) {
    return ConfigParseError{file.string(), line, std::move(message)};
  }

  std::expected<void, ConfigParseError> process_line(const std::filesystem::path& file, int number,
                                                     const std::string& raw, bool& active, int depth,
                                                     bool never_match) {
    std::string_view view(raw);
    auto first = view.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || view[first] == '#') return {};
    auto tokens = tokenize(view);
    if (!tokens) return std::unexpected(error(file, number, tokens.error()));
    auto& t = *tokens;
    std::string key = lower(t[0]);
    std::vector<std::string> args(t.begin() + 1, t.end());
    auto need = [&](std::size_t n) -> std::expected<void, ConfigParseError> {
      if (args.size() < n) return std::unexpected(error(file, number, "missing argument to " + t[0]));
      return {};
    };

    if (key == "host") {
      if (auto r = need(1); !r) return r;
      active = !never_match && match_pattern_list(args, alias);
      if (lookup && !never_match) note_host_line(args);
      return {};
    }
    if (key == "match") {
      if (auto r = need(1); !r) return r;
      auto m = evaluate_match(file, number, args);
      if (!m) return std::unexpected(m.error());
      active = !never_match && *m;
      return {};
    }
    if (key == "include") {
      if (auto r = need(1); !r) return r;
      if (depth >= kMaxIncludeDepth) return std::unexpected(error(file, number, "Include nested too deeply"));
      for (const auto& pattern : args) {
        std::string p = expand_tilde(pattern, local);
        if (!std::filesystem::path(p).is_absolute()) p = (ssh_dir / p).string();
        for (const auto& f : platform::glob_paths(p)) {
          // An included file starts in the includer's state; the state is restored after it.
          bool inner = active;
          if (auto r = read_file(f, inner, depth + 1, true, never_match || !active); !r) return r;
        }
      }
      return {};
    }
    if (!active) return validate_only(file, number, key, args);
    return apply(file, number, key, t[0], args);
  }

  void note_host_line(const std::vector<std::string>& args) {
    bool specific = false;
    for (const auto& entry : args) {
      std::stringstream ss(entry);
      for (std::string pat; std::getline(ss, pat, ',');) {
        if (pat.empty() || pat[0] == '!') continue;
        bool literal = pat.find_first_of("*?") == std::string::npos;
        if (literal && std::ranges::find(lookup->names, pat) == lookup->names.end()) lookup->names.push_back(pat);
        if (pat.find_first_not_of("*?") != std::string::npos && match_pattern(pat, alias)) specific = true;
      }
    }
    if (specific && match_pattern_list(args, alias)) lookup->named = true;
  }

  // Lines in inactive blocks are still checked so a broken file fails the same way for every host.
  std::expected<void, ConfigParseError> validate_only(const std::filesystem::path& file, int number,
                                                      const std::string& key, const std::vector<std::string>& args) {
    Collected saved = c;
    c = Collected{};
    auto r = apply(file, number, key, key, args);
    c = std::move(saved);
    return r;
  }

  std::expected<bool, ConfigParseError> evaluate_match(const std::filesystem::path& file, int number,
                                                       const std::vector<std::string>& args) {
    bool result = true;
    for (std::size_t i = 0; i < args.size(); ++i) {
      std::string crit = lower(args[i]);
      bool negate = false;
      if (crit.starts_with("!")) {
        negate = true;
        crit = crit.substr(1);
      }
      if (crit == "all" || crit == "canonical" || crit == "final") {
        result = result && !negate;
        continue;
      }
      if (i + 1 >= args.size()) return std::unexpected(error(file, number, "Match " + crit + " needs an argument"));
      std::string value = args[++i];
      std::vector<std::string> list;
      std::stringstream ss(value);
      for (std::string part; std::getline(ss, part, ',');) list.push_back(part);
      bool m = false;
      if (crit == "host") m = match_pattern_list(list, c.hostname.value_or(alias));
      else if (crit == "originalhost") m = match_pattern_list(list, alias);
      else if (crit == "user") m = match_pattern_list(list, c.user.value_or(local.local_user));
      else if (crit == "localuser") m = match_pattern_list(list, local.local_user);
      else m = false;  // exec, localnetwork, tagged: ferry cannot evaluate them, so the block does not apply
      result = result && (m != negate);
    }
    return result;
  }

  std::expected<void, ConfigParseError> apply(const std::filesystem::path& file, int number, const std::string& key,
                                              const std::string& spelled, const std::vector<std::string>& args) {
    auto fail = [&](std::string message) { return std::unexpected(error(file, number, std::move(message))); };
    auto need = [&]() -> bool { return !args.empty(); };
    static const std::vector<std::string> kSingleValued{
        "hostname", "user", "port", "identityfile", "identitiesonly", "stricthostkeychecking", "proxyjump",
        "connecttimeout", "serveraliveinterval", "serveralivecountmax"};
    if (args.size() > 1 && std::ranges::find(kSingleValued, key) != kSingleValued.end())
      return fail("keyword " + spelled + ": extra arguments at end of line");
    if (key == "hostname") {
      if (!need()) return fail("missing argument to " + spelled);
      if (!c.hostname) c.hostname = args[0];
    } else if (key == "user") {
      if (!need()) return fail("missing argument to " + spelled);
      if (!c.user) c.user = args[0];
    } else if (key == "port") {
      if (!need()) return fail("missing argument to " + spelled);
      auto p = parse_int(args[0]);
      if (!p || *p < 1 || *p > 65535) return fail("bad port \"" + args[0] + "\"");
      if (!c.port) c.port = *p;
    } else if (key == "identityfile") {
      if (!need()) return fail("missing argument to " + spelled);
      c.identity_files.push_back(args[0]);
    } else if (key == "identitiesonly") {
      if (!need()) return fail("missing argument to " + spelled);
      auto v = parse_yes_no(args[0]);
      if (!v) return fail("expected yes or no, got \"" + args[0] + "\"");
      if (!c.identities_only) c.identities_only = *v;
    } else if (key == "userknownhostsfile" || key == "globalknownhostsfile") {
      if (!need()) return fail("missing argument to " + spelled);
      auto& slot = key == "userknownhostsfile" ? c.known_hosts : c.global_known_hosts;
      if (!slot) slot = args;
    } else if (key == "stricthostkeychecking") {
      if (!need()) return fail("missing argument to " + spelled);
      auto v = lower(args[0]);
      std::optional<StrictHostKeyChecking> mode;
      if (v == "yes" || v == "true" || v == "ask") mode = StrictHostKeyChecking::kYes;
      else if (v == "accept-new") mode = StrictHostKeyChecking::kAcceptNew;
      else if (v == "no" || v == "off" || v == "false") mode = StrictHostKeyChecking::kNo;
      if (!mode) return fail("expected yes, accept-new, no or ask, got \"" + args[0] + "\"");
      if (!c.strict) c.strict = mode;
    } else if (key == "proxyjump") {
      if (!need()) return fail("missing argument to " + spelled);
      if (lower(args[0]) != "none") {
        std::stringstream ss(args[0]);
        for (std::string hop; std::getline(ss, hop, ',');) {
          if (auto d = parse_destination(hop); !d) return fail("bad ProxyJump hop \"" + hop + "\": " + d.error());
        }
      }
      if (!c.proxy_jump && !c.proxy_command) c.proxy_jump = args[0];
    } else if (key == "proxycommand") {
      if (!need()) return fail("missing argument to " + spelled);
      if (!c.proxy_jump && !c.proxy_command) {
        std::string joined;
        for (const auto& a : args) joined += (joined.empty() ? "" : " ") + a;
        c.proxy_command = joined;
      }
    } else if (key == "connecttimeout" || key == "serveraliveinterval") {
      if (!need()) return fail("missing argument to " + spelled);
      std::optional<int> v = (key == "connecttimeout" && lower(args[0]) == "none") ? std::optional<int>(0)
                                                                                    : parse_time(args[0]);
      if (!v) return fail("bad time value \"" + args[0] + "\"");
      auto& slot = key == "connecttimeout" ? c.connect_timeout : c.alive_interval;
      if (!slot) slot = *v;
    } else if (key == "serveralivecountmax") {
      if (!need()) return fail("missing argument to " + spelled);
      auto v = parse_int(args[0]);
      if (!v || *v < 0) return fail("bad number \"" + args[0] + "\"");
      if (!c.alive_count) c.alive_count = *v;
    }
    // Every other keyword is valid OpenSSH that ferry does not use.
    return {};
  }
};

std::expected<HostConfig, ConfigParseError> resolve_depth(const Destination& dest,
                                                          const std::filesystem::path& config_file,
                                                          const LocalContext& local, bool required, int depth) {
  if (depth > kMaxJumpDepth) return std::unexpected(ConfigParseError{config_file.string(), 0, "ProxyJump chain too long (loop?)"});
  Parser p{local, dest.host, local.home / ".ssh", {}};
  bool active = true;
  if (auto r = p.read_file(config_file, active, 0, required); !r) return std::unexpected(r.error());
  const Collected& c = p.c;

  HostConfig h;
  h.alias = dest.host;
  h.user = dest.user ? *dest.user : c.user.value_or(local.local_user);
  h.port = dest.port ? *dest.port : c.port.value_or(22);
  TokenValues tv{dest.host, dest.host, h.user, local.local_user, local.home.string(), h.port};
  auto where = [&](std::string message) { return std::unexpected(ConfigParseError{config_file.string(), 0, std::move(message)}); };
  if (c.hostname) {
    auto e = expand_tokens(*c.hostname, tv, "h");
    if (!e) return where("HostName: " + e.error());
    h.hostname = *e;
  } else {
    h.hostname = dest.host;
  }
  tv.hostname = h.hostname;
  std::vector<std::string> ids = c.identity_files;
  h.identity_files_explicit = !ids.empty();
  if (ids.empty()) ids = {"~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ecdsa_sk", "~/.ssh/id_ed25519",
                          "~/.ssh/id_ed25519_sk", "~/.ssh/id_xmss", "~/.ssh/id_dsa"};
  for (const auto& id : ids) {
    auto e = expand_tokens(expand_tilde(id, local), tv, "dhnpru");
    if (!e) return where("IdentityFile: " + e.error());
    if (std::ranges::find(h.identity_files, *e) == h.identity_files.end()) h.identity_files.push_back(*e);
  }
  h.identities_only = c.identities_only.value_or(false);
  auto kh = c.known_hosts.value_or(std::vector<std::string>{"~/.ssh/known_hosts", "~/.ssh/known_hosts2"});
  for (const auto& f : kh) {
    if (lower(f) == "none") continue;
    auto e = expand_tokens(expand_tilde(f, local), tv, "dhnpru");
    if (!e) return where("UserKnownHostsFile: " + e.error());
    h.user_known_hosts_files.push_back(*e);
  }
  const auto sys = platform::ssh_system_dir();
  auto gkh = c.global_known_hosts.value_or(
      std::vector<std::string>{(sys / "ssh_known_hosts").string(), (sys / "ssh_known_hosts2").string()});
  for (const auto& f : gkh)
    if (lower(f) != "none") h.global_known_hosts_files.push_back(expand_tilde(f, local));
  h.strict_host_key_checking = c.strict.value_or(StrictHostKeyChecking::kYes);
  if (c.connect_timeout && *c.connect_timeout > 0) h.connect_timeout_s = *c.connect_timeout;
  h.server_alive_interval_s = c.alive_interval.value_or(0);
  h.server_alive_count_max = c.alive_count.value_or(3);
  h.proxy_command = c.proxy_command;

  if (c.proxy_jump && lower(*c.proxy_jump) != "none") {
    std::stringstream ss(*c.proxy_jump);
    bool first = true;
    for (std::string hop; std::getline(ss, hop, ',');) {
      auto d = parse_destination(hop);
      if (!d) return where("ProxyJump: " + d.error());
      auto r = resolve_depth(*d, config_file, local, required, depth + 1);
      if (!r) return r;
      HostConfig hop_config = std::move(*r);
      std::vector<HostConfig> before;
      if (first) before = std::move(hop_config.proxy_jump);
      hop_config.proxy_jump.clear();
      for (auto& b : before) h.proxy_jump.push_back(std::move(b));
      h.proxy_jump.push_back(std::move(hop_config));
      first = false;
    }
  }
  return h;
}

}  // namespace

std::string_view to_string(StrictHostKeyChecking mode) {
  switch (mode) {
    case StrictHostKeyChecking::kYes: return "yes";
    case StrictHostKeyChecking::kAcceptNew: return "accept-new";
    case StrictHostKeyChecking::kNo: return "no";
  }
  return "yes";
}

std::string ConfigParseError::to_string() const {
  if (line > 0) return file + ":" + std::to_string(line) + ": " + message;
  return file + ": " + message;
}

std::expected<Destination, std::string> parse_destination(std::string_view text) {
  Destination d;
  if (text.empty()) return std::unexpected("empty host");
  if (text.starts_with("ssh://")) text.remove_prefix(6);
  if (text.ends_with("/")) text.remove_suffix(1);
  auto at = text.rfind('@');
  if (at != std::string_view::npos) {
    if (at == 0) return std::unexpected("empty user in \"" + std::string(text) + "\"");
    d.user = std::string(text.substr(0, at));
    text.remove_prefix(at + 1);
  }
  std::string_view port_text;
  if (text.starts_with("[")) {
    auto close = text.find(']');
    if (close == std::string_view::npos) return std::unexpected("unterminated '['");
    d.host = std::string(text.substr(1, close - 1));
    auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') return std::unexpected("unexpected text after ']'");
      port_text = rest.substr(1);
      if (port_text.empty()) return std::unexpected("empty port");
    }
  } else {
    auto colon = text.find(':');
    if (colon != std::string_view::npos) {
      if (text.find(':', colon + 1) != std::string_view::npos)
        return std::unexpected("IPv6 addresses need brackets: [addr]:port");
      port_text = text.substr(colon + 1);
      if (port_text.empty()) return std::unexpected("empty port");
      text = text.substr(0, colon);
    }
    d.host = std::string(text);
  }
  if (d.host.empty()) return std::unexpected("empty host");
  for (char ch : d.host)
    if (std::isspace(static_cast<unsigned char>(ch)) || ch == '/' || ch == '@')
      return std::unexpected("bad character in host \"" + d.host + "\"");
  if (!port_text.empty()) {
    auto p = parse_int(port_text);
    if (!p || *p < 1 || *p > 65535) return std::unexpected("bad port \"" + std::string(port_text) + "\"");
    d.port = *p;
  }
  return d;
}

LocalContext current_local_context() {
  LocalContext local;
  local.local_user = platform::user_name();
  // OpenSSH takes ~ from the password database; $HOME only when there is none.
  if (auto home = platform::login_home_dir()) local.home = *home;
  return local;
}

std::filesystem::path default_config_path(const LocalContext& local) { return local.home / ".ssh" / "config"; }

bool match_pattern(std::string_view pattern, std::string_view text) {
  // Iterative glob with backtracking on the last '*', case-insensitive as OpenSSH's match_pattern is
  // used on lowercased host names.
  std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  auto eq = [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  };
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || eq(pattern[p], text[t]))) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool match_pattern_list(const std::vector<std::string>& patterns, std::string_view host) {
  bool matched = false;
  for (const auto& entry : patterns) {
    std::stringstream ss(entry);
    for (std::string pat; std::getline(ss, pat, ',');) {
      if (pat.empty()) continue;
      if (pat[0] == '!') {
        if (match_pattern(std::string_view(pat).substr(1), host)) return false;  // a negated match vetoes
      } else if (match_pattern(pat, host)) {
        matched = true;
      }
    }
  }
  return matched;
}

std::expected<HostConfig, ConfigParseError> resolve_host(const Destination& destination,
                                                         const std::filesystem::path& config_file,
                                                         const LocalContext& local, bool config_file_required) {
  return resolve_depth(destination, config_file, local, config_file_required, 0);
}

std::expected<HostConfig, ConfigParseError> resolve_host(std::string_view destination,
                                                         const std::optional<std::string>& config_file) {
  auto d = parse_destination(destination);
  if (!d) return std::unexpected(ConfigParseError{"", 0, "bad host \"" + std::string(destination) + "\": " + d.error()});
  auto local = current_local_context();
  if (config_file) return resolve_host(*d, expand_tilde(*config_file, local), local, true);
  return resolve_host(*d, default_config_path(local), local, false);
}

std::expected<HostAliasLookup, ConfigParseError> lookup_host_alias(std::string_view alias,
                                                                   const std::optional<std::string>& config_file,
                                                                   const LocalContext& local) {
  HostAliasLookup out;
  Parser p{local, std::string(alias), local.home / ".ssh", {}};
  p.lookup = &out;
  bool active = true;
  auto file = config_file ? std::filesystem::path(expand_tilde(*config_file, local)) : default_config_path(local);
  if (auto r = p.read_file(file, active, 0, config_file.has_value()); !r) return std::unexpected(r.error());
  return out;
}

std::string describe(const HostConfig& host) {
  std::string out = host.user.empty() ? "" : host.user + "@";
  bool v6 = host.hostname.find(':') != std::string::npos;
  // Appended piece by piece: GCC 12 reports `":" + std::to_string(port)` here as an overlapping
  // copy (-Wrestrict, a false positive).
  if (v6) out += '[';
  out += host.hostname;
  if (v6) out += ']';
  if (host.port != 22) {
    out += ':';
    out += std::to_string(host.port);
  }
  return out;
}

}  // namespace ferry::ssh
