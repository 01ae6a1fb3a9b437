// Wire path validation inside the agent root: see root_path.hpp.
#include "remote-runtime/agent/root_path.hpp"

#include <system_error>
#include <vector>

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

std::expected<RootPath, std::string> RootPath::open(const fs::path& root) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return std::unexpected("cannot create root '" + root.string() + "': " + ec.message());
  fs::path canon = fs::canonical(root, ec);
  if (ec) return std::unexpected("cannot resolve root '" + root.string() + "': " + ec.message());
  if (!fs::is_directory(canon, ec)) return std::unexpected("root '" + root.string() + "' is not a directory");
  return RootPath(canon);
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
