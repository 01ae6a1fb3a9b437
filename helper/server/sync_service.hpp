// The editor's side of the sync engine, for ferry's methods (sync/*) and LSP's (didSave,
// didChangeWatchedFiles, the ferry.sync command) alike. Saves arriving in a burst are coalesced
// into one push of just those paths per project by a saver thread; a push that would delete
// many remote files asks the person first.
#pragma once

#include <condition_variable>
#include <expected>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "helper/server/server_context.hpp"
#include "helper/server/server_progress.hpp"
#include "helper/sync/sync_engine.hpp"
#include "protocol/binding_table.hpp"
#include "protocol/messages_sync.hpp"

namespace ferry::server {

using protocol::SyncPushParams;

class SyncService {
 public:
  explicit SyncService(const ServerContext& ctx) : ctx_(ctx) {}
  ~SyncService();

  // `work`: progress and cancellation of a command that syncs first (its token, not the call's).
  // `ask_editor`: mass deletes not confirmed in the params are put to the editor (a terminal's
  // push through the project socket holds them instead).
  std::expected<protocol::SyncResult, protocol::ResponseError> push(const SyncPushParams& params,
                                                                    protocol::CallContext& call,
                                                                    ServerProgress::Work* work = nullptr,
                                                                    bool ask_editor = true);
  std::expected<protocol::SyncResult, protocol::ResponseError> pull(const protocol::SyncPullParams& params,
                                                                    protocol::CallContext& call);
  // `project`: a ferry.json or its folder (none: the workspace project's). Pending saves, the last
  // sync and its error are that project's (several workspace folders, several projects).
  protocol::SyncStatusResult status(const std::optional<std::string>& project = std::nullopt);
  // Waits for pending saves, then pushes the whole tree: the remote is up to date on return.
  std::expected<protocol::SyncResult, protocol::ResponseError> flush(const std::optional<std::string>& project,
                                                                     protocol::CallContext& call,
                                                                     ServerProgress::Work* work = nullptr);
  // A saved (or created, changed, deleted) file: an absolute path, a file:// URI, or a path
  // relative to the workspace project's mapping (its root, with several mappings). Returns at
  // once; the saver pushes it to the mapping holding it (a file in no mapping is not synced).
  void file_saved(const std::string& path_or_uri);

 private:
  template <class Fn>
  std::expected<protocol::SyncResult, protocol::ResponseError> run(const std::optional<std::string>& project,
                                                                   protocol::CallContext& call, const std::string& title,
                                                                   sync::SyncOptions& o, Fn&& fn,
                                                                   ServerProgress::Work* work = nullptr);
  void save_loop();
  // One project's share of a burst of saves.
  std::string push_saved(const std::filesystem::path& project_file, const std::vector<std::string>& paths,
                         std::optional<protocol::SyncResult>& summary);

  const ServerContext& ctx_;
  std::mutex save_mu_;
  std::condition_variable save_cv_;
  std::set<std::string> pending_;
  std::set<std::string> reported_outside_;  // saved files in no mapping, said once (saver thread only)
  bool saving_ = false, stop_ = false, flush_now_ = false;
  int running_ = 0;  // pushes and pulls under way (status's "busy")
  // By project root.
  std::map<std::string, protocol::SyncResult> last_;
  std::map<std::string, std::string> last_error_;
  std::thread saver_;
};

}  // namespace ferry::server
