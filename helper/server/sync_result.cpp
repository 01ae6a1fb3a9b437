// SyncSummary -> protocol::SyncResult: see sync_result.hpp.
#include "helper/server/sync_result.hpp"

namespace ferry::server {

namespace {

const char* conflict_name(sync::ConflictKind k) {
  switch (k) {
    case sync::ConflictKind::changed_remotely: return "changed_remotely";
    case sync::ConflictKind::untracked_remote: return "untracked_remote";
    case sync::ConflictKind::deleted_locally_changed_remotely: return "deleted_locally_changed_remotely";
    case sync::ConflictKind::kind_mismatch: return "kind_mismatch";
  }
  return "conflict";
}

}  // namespace

protocol::SyncResult sync_result(const sync::SyncSummary& s) {
  protocol::SyncResult r;
  r.files_sent = s.files_sent;
  r.files_deleted = s.files_deleted;
  r.bytes_literal = s.bytes_literal;
  r.bytes_matched = s.bytes_matched;
  r.bytes_on_wire = s.bytes_on_wire;
  r.dirs_made = s.dirs_made;
  r.metadata_only = s.metadata_only;
  r.unchanged = s.unchanged;
  r.seconds = s.seconds;
  r.dry_run = s.dry_run;
  r.cancelled = s.cancelled;
  for (const auto& c : s.conflicts) r.conflicts.push_back({c.path, conflict_name(c.kind), c.message});
  r.held_deletes = s.held_deletes;
  r.errors = s.errors;
  r.unstable = s.unstable;
  r.local_scan = s.local_scan;
  r.full_walk_reason = s.full_walk_reason;
  if (s.no_space)
    r.no_space = protocol::SyncNoSpace{s.no_space->path, s.no_space->available_bytes, s.no_space->total_bytes,
                                       s.no_space->needed_bytes, s.no_space->failed_paths};
  return r;
}

protocol::json to_json(const sync::SyncSummary& s) { return protocol::to_json(sync_result(s)); }

sync::SyncSummary summary_from_json(const protocol::json& j) {
  sync::SyncSummary s;
  if (!j.is_object()) return s;
  auto count = [&j](const char* key) { return j.contains(key) && j[key].is_number_unsigned() ? j[key].get<std::uint64_t>() : 0; };
  auto words = [&j](const char* key) {
    std::vector<std::string> out;
    if (j.contains(key) && j[key].is_array())
      for (const auto& w : j[key])
        if (w.is_string()) out.push_back(w.get<std::string>());
    return out;
  };
  s.files_sent = count("filesSent");
  s.files_deleted = count("filesDeleted");
  s.bytes_literal = count("bytesLiteral");
  s.bytes_matched = count("bytesMatched");
  s.bytes_on_wire = count("bytesOnWire");
  s.dirs_made = count("dirsMade");
  s.metadata_only = count("metadataOnly");
  s.unchanged = count("unchanged");
  s.seconds = j.value("seconds", 0.0);
  s.dry_run = j.value("dryRun", false);
  s.cancelled = j.value("cancelled", false);
  if (j.contains("conflictList") && j["conflictList"].is_array())
    for (const auto& c : j["conflictList"]) {
      const std::string kind = c.value("kind", "");
      auto k = sync::ConflictKind::changed_remotely;
      for (auto candidate : {sync::ConflictKind::untracked_remote, sync::ConflictKind::deleted_locally_changed_remotely,
                             sync::ConflictKind::kind_mismatch})
        if (kind == conflict_name(candidate)) k = candidate;
      s.conflicts.push_back({c.value("path", ""), k, c.value("message", "")});
    }
  s.held_deletes = words("heldDeletes");
  s.errors = words("errors");
  s.unstable = words("unstable");
  s.local_scan = j.value("localScan", std::string("full"));
  s.full_walk_reason = j.value("fullWalkReason", std::string());
  return s;
}

}  // namespace ferry::server
