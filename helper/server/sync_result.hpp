// A sync engine's summary as the IDE wire's typed SyncResult (protocol/messages_sync.hpp): the
// one place the engine's struct meets the wire, for sync/*, train/start and the CLI's --json.
#pragma once

#include "helper/sync/sync_engine.hpp"
#include "protocol/messages_sync.hpp"

namespace ferry::server {

protocol::SyncResult sync_result(const sync::SyncSummary& s);
// The wire JSON of a summary (sync/push's result shape).
protocol::json to_json(const sync::SyncSummary& s);
// And back, for a terminal's `ferry sync` answered by the project's live server: what the CLI
// prints of a summary (counts, lists, flags; a conflict's kind from its name).
sync::SyncSummary summary_from_json(const protocol::json& result);

}  // namespace ferry::server
