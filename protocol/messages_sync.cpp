// Typed sync/* messages: see messages_sync.hpp.
#include "protocol/messages_sync.hpp"

namespace ferry::protocol {

std::string_view to_string(SyncDeletes d) {
  switch (d) {
    case SyncDeletes::mirror: return "mirror";
    case SyncDeletes::none: return "none";
    case SyncDeletes::owned: break;
  }
  return "owned";
}

std::optional<DecodeError> from_json(const json& j, SyncPushParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  std::string deletes = "owned";
  r.optional("path", out.path);
  r.optional("dryRun", out.dry_run);
  r.optional("force", out.force);
  r.optional("delete", deletes);
  r.optional("confirmMassDelete", out.confirm_mass_delete);
  r.optional("paths", out.paths);
  r.check(deletes == "owned" || deletes == "mirror" || deletes == "none", "delete",
          "expected \"owned\", \"mirror\" or \"none\"");
  out.deletes = deletes == "mirror" ? SyncDeletes::mirror : deletes == "none" ? SyncDeletes::none : SyncDeletes::owned;
  return r.error();
}

std::optional<DecodeError> from_json(const json& j, SyncPullParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.optional("path", out.path);
  r.required("paths", out.paths);
  r.optional("dryRun", out.dry_run);
  r.optional("force", out.force);
  r.check(!out.paths.empty(), "paths", "expected at least one path");
  return r.error();
}

std::optional<DecodeError> from_json(const json& j, SyncProjectParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.optional("path", out.path);
  return r.error();
}

std::optional<DecodeError> from_json(const json& j, FileSavedParams& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  std::optional<std::string> path, uri;
  r.optional("path", path);
  r.optional("uri", uri);
  r.check(path || uri, "path", "expected path or uri");
  if (auto e = r.error()) return e;
  out.path = path ? *path : *uri;  // a URI is decoded by the saver
  return std::nullopt;
}

json to_json(const SyncResult& r) {
  json c = json::array();
  for (const auto& x : r.conflicts) c.push_back({{"path", x.path}, {"kind", x.kind}, {"message", x.message}});
  json no_space = nullptr;
  if (r.no_space)
    no_space = {{"path", r.no_space->path},
                {"availableBytes", r.no_space->available_bytes},
                {"totalBytes", r.no_space->total_bytes},
                {"neededBytes", r.no_space->needed_bytes},
                {"failedPaths", r.no_space->failed_paths}};
  return json{{"filesSent", r.files_sent},       {"filesDeleted", r.files_deleted}, {"conflicts", r.conflicts.size()},
              {"bytesLiteral", r.bytes_literal}, {"bytesMatched", r.bytes_matched}, {"bytesOnWire", r.bytes_on_wire},
              {"seconds", r.seconds},            {"dirsMade", r.dirs_made},         {"metadataOnly", r.metadata_only},
              {"unchanged", r.unchanged},        {"dryRun", r.dry_run},             {"cancelled", r.cancelled},
              {"conflictList", std::move(c)},    {"heldDeletes", r.held_deletes},   {"errors", r.errors},
              {"unstable", r.unstable},          {"localScan", r.local_scan},       {"fullWalkReason", r.full_walk_reason},
              {"noSpace", std::move(no_space)}};
}

json to_json(const SyncStatusResult& r) {
  json j{{"pendingSaves", r.pending_saves},
         {"saving", r.saving},
         {"lastSync", r.last_sync ? to_json(*r.last_sync) : json(nullptr)},
         {"busy", r.busy}};
  if (!r.last_error.empty()) j["lastError"] = r.last_error;
  if (r.connected) j["connected"] = *r.connected;
  if (r.endpoint) j["endpoint"] = *r.endpoint;
  return j;
}

}  // namespace ferry::protocol
