// The agent's record of ferry writes under one sync base: a random epoch and a generation
// counter in <base>/.ferry/sync-state, bumped after every mutating sync request. A helper that
// remembers (epoch, generation) from the end of its last push knows, with one tiny request,
// that no ferry write happened since, so it can plan against its own manifest instead of
// listing the remote tree. The file lives inside the synced tree on purpose: wiping the tree
// (or a fresh box) wipes the record, which the helper sees as a new epoch.
#pragma once

#include <chrono>
#include <cstdint>
#include <expected>
#include <string>

#include "common/unique_fd.hpp"

#include "remote-runtime/agent/sync/file_writer.hpp"

namespace ferry::agent::sync {

struct SyncGeneration {
  std::string epoch;  // 32 hex digits; empty: no ferry write recorded under this base yet
  std::uint64_t generation = 0;
};

inline constexpr std::string_view kSyncStateDir = ".ferry";
inline constexpr std::string_view kSyncStateFile = "sync-state";
inline constexpr std::string_view kWriteGateFile = "writing";

// The record as it is now (missing or unreadable: empty epoch, generation 0).
std::expected<SyncGeneration, WriteError> read_generation(FileWriter& writer);
// Read-modify-write under flock, so agents serving two helpers at once never lose a bump. A
// torn or foreign file starts a new epoch: helpers then list once, which is only extra work.
std::expected<SyncGeneration, WriteError> bump_generation(FileWriter& writer);

// The write gate, <base>/.ferry/writing: every request that can change the tree holds a shared
// flock on it while it runs, and a push's first look at the tree (sync/state, sync/list) waits
// until no one holds it. An agent whose helper vanished mid-push (a dropped link) finishes the
// writes it had begun; without the gate their renames could land after the next push's listing
// and read as someone else's change (a conflict, or "changed since planned").
// An invalid fd when the gate cannot be made (the write then goes on ungated).
posix::UniqueFd enter_write_gate(FileWriter& writer);
// Waits, at most `cap`, until no request holds the gate; false when it gave up.
bool wait_for_writers(FileWriter& writer, std::chrono::milliseconds cap);

}  // namespace ferry::agent::sync
