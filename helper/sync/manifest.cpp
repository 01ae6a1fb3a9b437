// Manifest JSON: {"version":1,"remote_root":"...","entries":{"path":{"kind":"file",
// "mode":420,"size":3,"mtime_ns":...,"hash":"<32 hex>"} | {"kind":"symlink","target":...} |
// {"kind":"dir",...}}, "remote_epoch":"...", "remote_generation":N}. Every field is validated
// on load.
#include "helper/sync/manifest.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include "helper/sync/atomic_file.hpp"

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

std::string manifest_to_json(const Manifest& m) {
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [path, meta] : m.entries) {
    nlohmann::json e{{"kind", kind_name(meta.kind)}, {"mode", meta.mode}, {"mtime_ns", meta.mtime_ns}};
    if (meta.kind == EntryKind::file) {
      e["size"] = meta.size;
      if (meta.hash) e["hash"] = to_hex(*meta.hash);
    }
    if (meta.kind == EntryKind::symlink) e["target"] = meta.link_target;
    entries[path] = std::move(e);
  }
  nlohmann::json doc{{"version", kManifestVersion}, {"remote_root", m.remote_root}, {"entries", entries}};
  if (!m.remote_epoch.empty()) {
    doc["remote_epoch"] = m.remote_epoch;
    doc["remote_generation"] = m.remote_generation;
  }
  return doc.dump();
}

std::expected<Manifest, std::string> manifest_from_json(std::string_view text) {
  const auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return std::unexpected("manifest is not a JSON object");
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
  for (const auto& [path, e] : doc["entries"].items()) {
    auto bad = [&](const char* what) { return std::unexpected("manifest entry '" + path + "': " + what); };
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
      meta.size = meta.link_target.size();
    }
    m.entries.emplace(path, std::move(meta));
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
