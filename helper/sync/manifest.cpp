// Manifest JSON: {"version":1,"remote_root":"...","entries":{"path":{"kind":"file",
// "mode":420,"size":3,"mtime_ns":...,"hash":"<32 hex>"} | {"kind":"symlink","target":...} |
// {"kind":"dir",...}}, "entries_hex":{...}, "remote_epoch":"...", "remote_generation":N}. Every
// field is validated on load. Linux names are bytes and JSON strings are UTF-8: an entry whose
// path or link target is not valid UTF-8 goes under "entries_hex" with both hex-encoded.
// Written by hand (keys in the order nlohmann's std::map would give, same bytes for the same
// manifest): building the DOM and dumping it took 80 ms of a 20k-file initial sync's tail.
#include "helper/sync/manifest.hpp"

#include <algorithm>
#include <charconv>
#include <optional>
#include <vector>
#include <cstdio>

#include <nlohmann/json.hpp>
#include "common/xxhash_inline.hpp"

#include "helper/sync/atomic_file.hpp"
#include "protocol/json_parse.hpp"

namespace ferry::sync {
namespace {

const char* kind_name(EntryKind k) {
  switch (k) {
    case EntryKind::file: return "file";
    case EntryKind::dir: return "dir";
    case EntryKind::symlink: return "symlink";
  }
  return "file";
}

}  // namespace

namespace {

// RFC 3629 / Unicode table 3-7: what nlohmann's parser accepts inside a string.
bool valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) n = 1;
    else if (c == 0xE0) n = 2, lo = 0xA0;
    else if (c == 0xED) n = 2, hi = 0x9F;
    else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) n = 2;
    else if (c == 0xF0) n = 3, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) n = 3;
    else if (c == 0xF4) n = 3, hi = 0x8F;
    else return false;
    if (end - p <= n) return false;
    if (p[1] < lo || p[1] > hi) return false;
    for (int i = 2; i <= n; ++i)
      if (p[i] < 0x80 || p[i] > 0xBF) return false;
    p += n + 1;
  }
  return true;
}

// As nlohmann's dump escapes (ensure_ascii off): the two specials, short forms for five
// controls, \u00xx for the other controls, every other byte as it is.
void append_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(kHex[c >> 4]);
          out.push_back(kHex[c & 15]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
}

template <typename Int>
void append_int(std::string& out, Int v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<std::size_t>(end - buf));
}

// One entry's object, keys sorted as nlohmann orders them.
void append_entry(std::string& out, const FileMeta& meta, bool hex) {
  out += '{';
  if (meta.kind == EntryKind::file && meta.hash) {
    out += "\"hash\":\"";
    out += to_hex(*meta.hash);
    out += "\",";
  }
  out += "\"kind\":\"";
  out += kind_name(meta.kind);
  out += "\",\"mode\":";
  append_int(out, meta.mode);
  out += ",\"mtime_ns\":";
  append_int(out, meta.mtime_ns);
  if (meta.kind == EntryKind::file) {
    out += ",\"size\":";
    append_int(out, meta.size);
  }
  if (meta.kind == EntryKind::symlink) {
    out += ",\"target\":";
    append_string(out, hex ? bytes_to_hex(meta.link_target) : meta.link_target);
  }
  out += '}';
}

}  // namespace

std::string manifest_to_json(const Manifest& m) {
  std::string out;
  out.reserve(64 + m.entries.size() * 160);
  std::vector<const TreeState::value_type*> raw;  // names or targets JSON cannot hold as text
  out += "{\"entries\":{";
  bool first = true;
  for (const auto& e : m.entries) {
    const auto& [path, meta] = e;
    if (!valid_utf8(path) || (meta.kind == EntryKind::symlink && !valid_utf8(meta.link_target))) {
      raw.push_back(&e);
      continue;
    }
    if (!first) out += ',';
    first = false;
    append_string(out, path);
    out += ':';
    append_entry(out, meta, false);
  }
  out += '}';
  if (!raw.empty()) {
    // Sorted by their hex keys, as a map of those keys would be.
    std::vector<std::pair<std::string, const FileMeta*>> hexed;
    for (const auto* e : raw) hexed.emplace_back(bytes_to_hex(e->first), &e->second);
    std::sort(hexed.begin(), hexed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    out += ",\"entries_hex\":{";
    for (std::size_t i = 0; i < hexed.size(); ++i) {
      if (i) out += ',';
      append_string(out, hexed[i].first);
      out += ':';
      append_entry(out, *hexed[i].second, true);
    }
    out += '}';
  }
  if (!m.remote_epoch.empty()) {
    out += ",\"remote_epoch\":";
    append_string(out, m.remote_epoch);
    out += ",\"remote_generation\":";
    append_int(out, m.remote_generation);
  }
  out += ",\"remote_root\":";
  append_string(out, valid_utf8(m.remote_root) ? m.remote_root : std::string());
  out += ",\"version\":";
  append_int(out, kManifestVersion);
  out += '}';
  return out;
}

std::expected<Manifest, std::string> manifest_from_json(std::string_view text) {
  const auto doc = protocol::parse_json_text(text).value_or(nlohmann::json());
  if (!doc.is_object()) return std::unexpected("manifest is not a JSON object");
  if (!doc.contains("version") || doc["version"] != kManifestVersion) {
    return std::unexpected("manifest version is not " + std::to_string(kManifestVersion));
  }
  Manifest m;
  if (doc.contains("remote_root") && doc["remote_root"].is_string()) m.remote_root = doc["remote_root"];
  if (!doc.contains("entries") || !doc["entries"].is_object()) return std::unexpected("manifest has no entries object");
  // Optional (older manifests lack it); anything odd means "unknown", which only costs a listing.
  if (doc.contains("remote_epoch") && doc["remote_epoch"].is_string() && doc.contains("remote_generation") &&
      doc["remote_generation"].is_number_unsigned()) {
    m.remote_epoch = doc["remote_epoch"];
    m.remote_generation = doc["remote_generation"];
  }
  auto read_entries = [&](const nlohmann::json& entries, bool hex) -> std::expected<void, std::string> {
    for (const auto& [key, e] : entries.items()) {
      std::string path = key;
      if (hex) {
        auto raw = bytes_from_hex(key);
        if (!raw) return std::unexpected("manifest entry '" + key + "': bad hex name");
        path = std::move(*raw);
      }
      auto bad = [&](const char* what) { return std::unexpected("manifest entry '" + key + "': " + what); };
      if (!e.is_object() || !e.contains("kind") || !e["kind"].is_string()) return bad("no kind");
      FileMeta meta;
      const std::string kind = e["kind"];
      if (kind == "file") meta.kind = EntryKind::file;
      else if (kind == "dir") meta.kind = EntryKind::dir;
      else if (kind == "symlink") meta.kind = EntryKind::symlink;
      else return bad("unknown kind");
      if (!e.contains("mode") || !e["mode"].is_number_unsigned() || e["mode"] > 07777) return bad("bad mode");
      meta.mode = e["mode"];
      if (!e.contains("mtime_ns") || !e["mtime_ns"].is_number_integer()) return bad("bad mtime_ns");
      meta.mtime_ns = e["mtime_ns"];
      if (meta.kind == EntryKind::file) {
        if (!e.contains("size") || !e["size"].is_number_unsigned()) return bad("bad size");
        meta.size = e["size"];
        if (e.contains("hash")) {
          if (!e["hash"].is_string()) return bad("bad hash");
          meta.hash = hash_from_hex(e["hash"].get<std::string>());
          if (!meta.hash) return bad("bad hash");
        }
      }
      if (meta.kind == EntryKind::symlink) {
        if (!e.contains("target") || !e["target"].is_string()) return bad("bad target");
        meta.link_target = e["target"];
        if (hex) {
          auto raw = bytes_from_hex(meta.link_target);
          if (!raw) return bad("bad hex target");
          meta.link_target = std::move(*raw);
        }
        meta.size = meta.link_target.size();
      }
      m.entries.emplace(std::move(path), std::move(meta));
    }
    return {};
  };
  if (auto ok = read_entries(doc["entries"], false); !ok) return std::unexpected(ok.error());
  if (doc.contains("entries_hex")) {
    if (!doc["entries_hex"].is_object()) return std::unexpected("manifest entries_hex is not an object");
    if (auto ok = read_entries(doc["entries_hex"], true); !ok) return std::unexpected(ok.error());
  }
  return m;
}

std::expected<Manifest, std::string> load_manifest(const std::filesystem::path& file) {
  auto text = read_whole_file(file);
  if (!text) {
    if (text.error() == "missing") return Manifest{};
    return std::unexpected(text.error());
  }
  auto m = manifest_from_json(*text);
  if (!m) return std::unexpected(file.string() + ": " + m.error());
  return m;
}

std::expected<void, std::string> save_manifest(const std::filesystem::path& file, const Manifest& m) {
  return write_file_atomically(file, manifest_to_json(m));
}

std::filesystem::path default_manifest_path(const std::filesystem::path& project_root, std::string_view host,
                                            std::string_view remote_root) {
  std::string key(host);
  key.push_back('\n');
  key.append(remote_root);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH3_64bits(key.data(), key.size())));
  std::string name = "manifest-";
  name.append(hex).append(".json");
  return project_root / ".ferry" / name;
}

}  // namespace ferry::sync
