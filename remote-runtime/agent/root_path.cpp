// Wire path validation inside the agent root: see root_path.hpp.
#include "remote-runtime/agent/root_path.hpp"

#include <unistd.h>

#include <cstdlib>
#include <system_error>
#include <vector>

#include "protocol/mapping_root.hpp"
#include "remote-runtime/agent/box_lookup.hpp"

namespace ferry::agent {
namespace fs = std::filesystem;

namespace {
constexpr std::size_t kMaxWirePath = 4096;
constexpr int kMaxSymlinkHops = 40;  // as Linux's ELOOP limit
}  // namespace

std::expected<std::string, std::string> normalize_wire_path(std::string_view p) {
  if (p.size() > kMaxWirePath) return std::unexpected("path longer than " + std::to_string(kMaxWirePath) + " bytes");
  if (p.find('\0') != std::string_view::npos) return std::unexpected("path contains a NUL byte");
  if (p.starts_with('/')) return std::unexpected("absolute path '" + std::string(p) + "' (paths are relative to the root)");
  std::string out;
  std::size_t pos = 0;
  while (pos <= p.size()) {
    auto slash = p.find('/', pos);
    std::string_view part = p.substr(pos, slash == std::string_view::npos ? std::string_view::npos : slash - pos);
    if (part == "..") return std::unexpected("path '" + std::string(p) + "' contains '..'");
    if (!part.empty() && part != ".") {
      if (!out.empty()) out += '/';
      out += part;
    }
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  return out;
}

std::expected<fs::path, std::string> resolve_root_location(const fs::path& given) {
  std::error_code ec;
  fs::path abs = fs::absolute(given, ec);
  if (ec) return std::unexpected("cannot resolve '" + given.string() + "': " + ec.message());
  // The deepest ancestor that exists (symlink_status: a dangling link is not a way through).
  fs::path existing = abs;
  fs::path rest;
  while (!fs::exists(fs::symlink_status(existing, ec))) {
    if (!existing.has_relative_path()) break;
    rest = rest.empty() ? existing.filename() : existing.filename() / rest;
    existing = existing.parent_path();
  }
  fs::path canon = fs::canonical(existing, ec);
  if (ec) return std::unexpected("cannot resolve '" + given.string() + "': " + ec.message());
  return rest.empty() ? canon : (canon / rest).lexically_normal();
}

namespace {

// The homes the agent's user may have: $HOME and the password database's, resolved.
std::vector<fs::path> own_homes() {
  std::vector<fs::path> out;
  std::vector<std::string> named;
  if (const char* h = std::getenv("HOME"); h && *h) named.emplace_back(h);
  if (auto pw = passwd_home(::getuid())) named.push_back(*pw);
  for (const auto& h : named) {
    std::error_code ec;
    if (auto canon = fs::canonical(h, ec); !ec) out.push_back(canon);
  }
  return out;
}

// "/a/./b/" -> "/a/b": what a path names, spelled as canonical() would if nothing were a link.
fs::path tidy(const fs::path& p) {
  fs::path out = p.lexically_normal();
  if (out.has_relative_path() && !out.has_filename()) out = out.parent_path();
  return out;
}

bool strictly_below(const fs::path& p, const fs::path& dir) {
  auto rel = p.lexically_relative(dir);
  return !rel.empty() && rel != "." && *rel.begin() != "..";
}

}  // namespace

std::optional<std::string> resolved_root_refusal(const fs::path& given, const fs::path& resolved) {
  std::optional<std::string> why;
  const auto homes = own_homes();
  for (const auto& h : homes)
    if (h == resolved) why = "it is the home directory " + h.string() + " itself";
  bool in_own_home = false;
  // (A home of "/", as some service users have, makes nothing the user's own.)
  for (const auto& h : homes) in_own_home = in_own_home || (h != "/" && strictly_below(resolved, h));
  if (!why && !in_own_home) why = protocol::mapping_root_reason(resolved.string());
  if (!why) return std::nullopt;
  std::string out = protocol::quoted(given.string());
  if (tidy(given) != resolved) out += " resolves to " + protocol::quoted(resolved.string()) + " on this host, which";
  return out + " cannot be a mapping root: " + *why + "; " + protocol::mapping_root_advice("NAME");
}

std::expected<RootPath, std::string> RootPath::open(const fs::path& root) {
  std::error_code ec;
  const fs::path given = fs::absolute(root, ec);
  if (!fs::exists(fs::symlink_status(root, ec))) {
    // Checked before anything is made: as root, a missing "~/link-to-etc/p" would become /etc/p.
    auto where = resolve_root_location(given);
    if (!where) return std::unexpected(where.error());
    if (auto refused = resolved_root_refusal(given, *where))
      return std::unexpected("refusing to create root: " + *refused);
  }
  fs::create_directories(root, ec);
  if (ec) return std::unexpected("cannot create root '" + root.string() + "': " + ec.message());
  fs::path canon = fs::canonical(root, ec);
  if (ec) return std::unexpected("cannot resolve root '" + root.string() + "': " + ec.message());
  if (!fs::is_directory(canon, ec)) return std::unexpected("root '" + root.string() + "' is not a directory");
  return RootPath(canon, tidy(given));
}

bool RootPath::inside(const fs::path& p) const {
  auto r = root_.begin();
  auto q = p.begin();
  for (; r != root_.end(); ++r, ++q) {
    if (q == p.end() || *r != *q) return false;
  }
  return true;
}

std::expected<ResolvedPath, std::string> RootPath::resolve(std::string_view wire_path, FollowFinal follow) const {
  auto rel = normalize_wire_path(wire_path);
  if (!rel) return std::unexpected(rel.error());
  std::vector<std::string> parts;
  for (std::size_t pos = 0; pos < rel->size();) {
    auto slash = rel->find('/', pos);
    if (slash == std::string::npos) slash = rel->size();
    parts.emplace_back(rel->substr(pos, slash - pos));
    pos = slash + 1;
  }
  fs::path current = root_;
  bool missing = false;  // below a missing directory nothing can be a symlink
  for (std::size_t i = 0; i < parts.size(); ++i) {
    fs::path next = current / parts[i];
    bool last = i + 1 == parts.size();
    if (missing || (last && follow == FollowFinal::no)) {
      current = next;
      continue;
    }
    std::error_code ec;
    auto st = fs::symlink_status(next, ec);
    if (ec || !fs::exists(st)) {
      missing = true;
      current = next;
      continue;
    }
    if (fs::is_symlink(st)) {
      // canonical() follows the whole chain; the result must still be inside the root.
      fs::path target = fs::canonical(next, ec);
      if (ec) {
        if (ec == std::errc::too_many_symbolic_link_levels)
          return std::unexpected("path '" + *rel + "': too many symlink levels (max " + std::to_string(kMaxSymlinkHops) + ")");
        // A dangling link: where would it lead? Judge by its lexical target.
        fs::path link = fs::read_symlink(next, ec);
        fs::path lexical = (link.is_absolute() ? link : current / link).lexically_normal();
        if (!inside(lexical))
          return std::unexpected("path '" + *rel + "' escapes the root through the symlink '" +
                                 fs::path(next).lexically_relative(root_).string() + "'");
        missing = true;
        current = lexical;
        continue;
      }
      if (!inside(target))
        return std::unexpected("path '" + *rel + "' escapes the root through the symlink '" +
                               fs::path(next).lexically_relative(root_).string() + "'");
      current = target;
    } else {
      current = next;
    }
  }
  return ResolvedPath{current, *rel};
}

}  // namespace ferry::agent
