// sync/push, sync/pull, sync/status, sync/flush and the sync/fileSaved notification over the
// SyncService (sync_service.hpp). Each goes to every mapping of the project (one engine per
// mapping, one link), or to the mappings holding the paths it names; pushes and pulls of one
// mapping run one at a time inside its engine; saves are coalesced (kSaveCoalesce) by the saver
// thread.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "helper/server/error_codes.hpp"
#include "helper/server/sync_result.hpp"
#include "helper/server/sync_service.hpp"
#include "helper/sync/mapping_target.hpp"
#include "protocol/file_uri.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
namespace fs = std::filesystem;
using p::json;
using p::ResponseError;

// Saves closer together than this go in one push (an editor's "save all" arrives as one burst
// of notifications already in the pipe); saves arriving while a push runs go in the next one.
// Short, because every save waits it out (the p95 save budget is 20 ms).
inline constexpr std::chrono::milliseconds kSaveCoalesce{1};
// A burst still arriving (a folder deleted in the IDE: one notification per file) is waited for
// up to this long, so it goes as one push and the mass-delete guard weighs it whole.
inline constexpr std::chrono::milliseconds kSaveBurstMax{20};
inline constexpr std::chrono::minutes kFlushTimeout{10};


SyncService::~SyncService() {
  {
    std::lock_guard lock(save_mu_);
    stop_ = true;
  }
  save_cv_.notify_all();
  if (saver_.joinable()) saver_.join();
}

namespace {

// Runs `each` on every mapping's engine that `paths` (one list per mapping; nullopt: all of
// them whole) gives work, and sums their summaries into one. With one mapping its summary is the
// result as it is; with several, paths in the sum carry their mapping's folder.
template <class Each>
std::expected<sync::SyncSummary, Error> over_mappings(ProjectLink& link,
                                                            const std::optional<std::vector<std::vector<std::string>>>& paths,
                                                            Each&& each) {
  const auto engines = link.engines();
  const auto config = link.config();
  auto paths_of = [&](std::size_t i) { return paths && i < paths->size() ? (*paths)[i] : std::vector<std::string>{}; };
  if (engines.size() == 1) return each(*engines.front(), paths_of(0));
  sync::SyncSummary total;
  total.local_scan.clear();
  for (std::size_t i = 0; i < engines.size(); ++i) {
    if (paths && paths_of(i).empty()) continue;
    auto s = each(*engines[i], paths_of(i));
    if (!s) return s;
    sync::add_summary(total, *s, i < config.mappings.size() ? sync::mapping_prefix(config.mappings[i]) : std::string());
    if (s->cancelled) break;
  }
  return total;
}

// A request's paths ("relative to the mapping") per mapping; nullopt for none named.
std::expected<std::optional<std::vector<std::vector<std::string>>>, Error> routed(ProjectLink& link,
                                                                                       const std::vector<std::string>& paths) {
  if (paths.empty()) return std::nullopt;
  auto by = sync::paths_by_mapping(link.config(), link.targets(), paths);
  if (!by) return std::unexpected(Error{ErrorKind::invalid_input, by.error()});
  return std::move(*by);
}

}  // namespace

std::expected<p::SyncResult, ResponseError> SyncService::push(const SyncPushParams& params, p::CallContext& call,
                                                              ServerProgress::Work* work, bool ask_editor) {
  sync::SyncOptions o;
  o.dry_run = params.dry_run;
  o.force = params.force;
  o.deletes = params.deletes == p::SyncDeletes::mirror ? sync::DeleteMode::mirror
              : params.deletes == p::SyncDeletes::none ? sync::DeleteMode::none
                                                       : sync::DeleteMode::owned;
  return run(params.path, call, "Syncing", o, [&](ProjectLink& link) -> std::expected<sync::SyncSummary, Error> {
    auto paths = routed(link, params.paths);
    if (!paths) return std::unexpected(paths.error());
    return over_mappings(link, *paths, [&](sync::SyncEngine& e, std::vector<std::string> only) {
      sync::SyncOptions mine = o;
      mine.only_paths = std::move(only);
      // confirmMassDelete: the caller already asked the person; otherwise ask now.
      const bool confirmed = params.confirm_mass_delete;
      const std::string root = e.target().local_root.string();
      mine.confirm_mass_delete = [this, confirmed, ask_editor, root, &call](const std::string& reason, std::size_t n) {
        return confirmed || (ask_editor && ctx_.questions.confirm_mass_delete(reason, n, root, call.cancellation()));
      };
      return e.push(mine);
    });
  }, work);
}

std::expected<p::SyncResult, ResponseError> SyncService::pull(const p::SyncPullParams& params, p::CallContext& call) {
  sync::SyncOptions o;
  o.dry_run = params.dry_run;
  o.force = params.force;
  return run(params.path, call, "Pulling", o, [&](ProjectLink& link) -> std::expected<sync::SyncSummary, Error> {
    auto paths = routed(link, params.paths);
    if (!paths) return std::unexpected(paths.error());
    return over_mappings(link, *paths, [&](sync::SyncEngine& e, const std::vector<std::string>& mine) {
      // Nothing named at all: the engine says so as it always did.
      return e.pull(mine.empty() ? params.paths : mine, o);
    });
  });
}

namespace {

// A saved path as an absolute path: URIs decoded, relative ones below the workspace project's
// mapping. Empty when it cannot be one.
fs::path absolute_saved_path(const std::string& saved, const Workspace& workspace) {
  if (saved.starts_with("file:")) {
    auto path = p::file_uri_to_fs_path(saved);
    if (!path) {
      spdlog::warn("sync on save: {}", path.error());
      return {};
    }
    return *path;
  }
  fs::path path(saved);
  if (path.is_absolute()) return path;
  auto config = lookup_project(std::nullopt, workspace);
  if (!config) return {};
  // As every path "relative to the mapping": with several mappings, relative to the project root.
  if (config->mappings.size() > 1) return config->root / path;
  return sync::mapping_target(*config, config->mappings.front()).local_root / path;
}

}  // namespace

p::SyncStatusResult SyncService::status(const std::optional<std::string>& project) {
  p::SyncStatusResult r;
  auto config = lookup_project(project, ctx_.workspace);
  const std::string root = config ? config->root.string() : "";
  std::lock_guard lock(save_mu_);
  for (const auto& saved : pending_) {
    const std::string rel = absolute_saved_path(saved, ctx_.workspace).lexically_relative(config ? config->root : fs::path()).string();
    if (!config || (!rel.empty() && !rel.starts_with(".."))) r.pending_saves.push_back(saved);
  }
  r.saving = saving_;
  if (auto it = last_.find(root); it != last_.end()) r.last_sync = it->second;
  if (auto it = last_error_.find(root); it != last_error_.end()) r.last_error = it->second;
  r.busy = running_ > 0;
  if (config) {
    if (auto link = ctx_.sessions.current(config->root)) {
      r.connected = link->endpoint().connected();
      r.endpoint = link->endpoint().description();
    } else {
      r.connected = false;
    }
  }
  return r;
}

std::expected<p::SyncResult, ResponseError> SyncService::flush(const std::optional<std::string>& project, p::CallContext& call,
                                                      ServerProgress::Work* work) {
  {
    std::unique_lock lock(save_mu_);
    flush_now_ = true;
    save_cv_.notify_all();
    bool drained = save_cv_.wait_for(lock, kFlushTimeout, [&] {
      return (pending_.empty() && !saving_) || stop_ || call.cancelled();
    });
    if (call.cancelled()) return std::unexpected(p::cancelled_error("sync/flush"));
    if (!drained) return std::unexpected(response_error({ErrorKind::io, "pending saves did not finish"}, p::method::kSyncFlush));
  }
  SyncPushParams all;
  all.path = project;
  return push(all, call, work);
}

void SyncService::file_saved(const std::string& path_or_uri) {
  std::lock_guard lock(save_mu_);
  pending_.insert(path_or_uri);
  if (!saver_.joinable()) saver_ = std::thread([this] { save_loop(); });
  save_cv_.notify_all();
}

template <class Fn>
std::expected<p::SyncResult, ResponseError> SyncService::run(const std::optional<std::string>& project, p::CallContext& call,
                                                    const std::string& title, sync::SyncOptions& o, Fn&& fn,
                                                    ServerProgress::Work* work) {
  // A command's own progress (begun by it) reports the sync; else the call's token, if any.
  p::WorkDoneProgress own = work ? p::WorkDoneProgress() : call.progress();
  p::WorkDoneProgress& progress = work ? work->progress() : own;
  if (!work) progress.begin(title);
  std::mutex pm;
  int last_pct = -1;
  o.progress = [&](std::uint64_t done, std::uint64_t total) {
    int pct = total ? static_cast<int>(done * 100 / total) : 100;
    std::lock_guard lock(pm);
    if (pct == last_pct) return;
    last_pct = pct;
    progress.report(fmt::format("{} / {} bytes", done, total), pct);
  };
  o.cancelled = [&call, work] { return call.cancelled() || (work && work->cancelled()); };
  o.waiting = [&progress](const std::string& holder) { progress.report("waiting for " + holder); };
  // A big remote tree is listed in pages: say how far it got rather than sit at 0% in silence
  // (a sync/push cancelled meanwhile stops between pages).
  o.listing_progress = [&](std::uint64_t listed) { progress.report(fmt::format("listing the remote: {} entries", listed)); };
  auto link = ctx_.link(project, call.cancellation(), [&progress](const std::string& m) { progress.report(m); });
  if (!link) return std::unexpected(link.error());
  {
    std::lock_guard lock(save_mu_);
    ++running_;
  }
  auto s = fn(**link);
  std::lock_guard lock(save_mu_);
  --running_;
  // The engine's error carries its kind: an agent gone away mid-sync is agent_lost (-32097:
  // reconnect and retry), a failed read or write io (-32094).
  if (!s) return std::unexpected(response_error(s.error(), call.method()));
  if (work) progress.report(s->one_line());
  else progress.end(s->one_line());
  if (s->cancelled) return std::unexpected(p::cancelled_error(call.method()));
  p::SyncResult r = sync_result(*s);
  last_[(*link)->config().root.string()] = r;
  return r;
}


std::string SyncService::push_saved(const fs::path& project_file, const std::vector<std::string>& paths,
                                    std::optional<p::SyncResult>& summary) {
  auto config = deploy::load_project(project_file);
  if (!config) return config.error().to_string();
  auto link = ctx_.sessions.link(*config);
  if (!link && link.error().code == p::error_code::kServedElsewhere) {
    spdlog::debug("sync on save: {}", link.error().message);  // the other server syncs them
    return {};
  }
  if (!link) return link.error().message;
  // Each saved file goes to the mapping holding it (the deepest, for nested folders).
  const auto targets = (*link)->targets();
  std::vector<std::vector<std::string>> by_mapping(targets.size());
  for (const auto& path : paths) {
    if (auto in = sync::mapping_of(targets, fs::path(path))) {
      by_mapping[in->mapping].push_back(in->rel);
    } else if (reported_outside_.insert(path).second) {
      spdlog::debug("sync on save: {} is in no mapping of {}; not synced", path, project_file.string());
    }
  }
  if (std::ranges::all_of(by_mapping, [](const auto& v) { return v.empty(); })) return {};
  auto pushed = over_mappings(**link, by_mapping, [&](sync::SyncEngine& e, std::vector<std::string> only) {
    sync::SyncOptions o;
    o.only_paths = std::move(only);
    // Saves that delete many files (a folder removed in the editor) ask like a push; held deletes
    // otherwise wait for the next full push.
    const std::string root = e.target().local_root.string();
    o.confirm_mass_delete = [this, root](const std::string& reason, std::size_t n) {
      return ctx_.questions.confirm_mass_delete(reason, n, root, p::CancellationToken{});
    };
    return e.push(o);
  });
  if (!pushed) return pushed.error().message;
  summary = sync_result(*pushed);
  return {};
}

void SyncService::save_loop() {
  std::unique_lock lock(save_mu_);
  while (!stop_) {
    save_cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
    if (stop_) return;
    // Coalesce the burst: wait out the window, and again while it keeps growing, unless a flush
    // wants it now.
    const auto burst_end = std::chrono::steady_clock::now() + kSaveBurstMax;
    for (std::size_t seen = 0; pending_.size() != seen && std::chrono::steady_clock::now() < burst_end;) {
      seen = pending_.size();
      if (save_cv_.wait_for(lock, kSaveCoalesce, [&] { return stop_ || flush_now_; })) break;
    }
    flush_now_ = false;
    std::set<std::string> saved;
    saved.swap(pending_);
    saving_ = true;
    lock.unlock();
    // Each file goes to the project it lies in (several workspace folders, several projects).
    std::map<fs::path, std::vector<std::string>> by_project;
    for (const auto& s : saved) {
      fs::path path = absolute_saved_path(s, ctx_.workspace);
      if (path.empty()) continue;
      if (auto file = deploy::find_project_file(path)) by_project[*file].push_back(path.lexically_normal().string());
    }
    std::map<std::string, std::pair<std::optional<p::SyncResult>, std::string>> outcomes;  // by project root
    for (const auto& [file, paths] : by_project) {
      auto& [summary, error] = outcomes[file.parent_path().string()];
      error = push_saved(file, paths, summary);
    }
    lock.lock();
    saving_ = false;
    for (auto& [root, outcome] : outcomes) {
      if (outcome.first) last_[root] = std::move(*outcome.first);
      last_error_[root] = outcome.second;
      if (!outcome.second.empty()) spdlog::warn("sync on save: {}", outcome.second);
    }
    save_cv_.notify_all();
  }
}

void bind_sync_methods(p::BindingTable& table, std::shared_ptr<SyncService> service) {
  table.request<SyncPushParams, p::SyncResult>(
      p::method::kSyncPush,
      [service](const SyncPushParams& params, p::CallContext& ctx) { return service->push(params, ctx); },
      p::Execution::worker);
  table.request<p::SyncPullParams, p::SyncResult>(
      p::method::kSyncPull,
      [service](const p::SyncPullParams& params, p::CallContext& ctx) { return service->pull(params, ctx); },
      p::Execution::worker);
  table.request<p::SyncProjectParams, p::SyncStatusResult>(
      p::method::kSyncStatus,
      [service](const p::SyncProjectParams& params, p::CallContext&) -> std::expected<p::SyncStatusResult, ResponseError> {
        return service->status(params.path);
      },
      p::Execution::worker);
  table.request<p::SyncProjectParams, p::SyncResult>(
      p::method::kSyncFlush,
      [service](const p::SyncProjectParams& params, p::CallContext& ctx) { return service->flush(params.path, ctx); },
      p::Execution::worker);
  table.notification<p::FileSavedParams>(
      p::method::kSyncFileSaved,
      [service](const p::FileSavedParams& params, p::CallContext&) { service->file_saved(params.path); });
  table.reserve_name(p::method::kSyncConfirmMassDelete);
}

}  // namespace ferry::server
