// sync/push, sync/pull, sync/status, sync/flush and the sync/fileSaved notification: the IDE's
// side of the sync engine. One sync runs at a time per server; saves arriving in a burst are
// coalesced (kSaveCoalesce) into one push of just those paths by a saver thread. A push that
// would delete many remote files asks the IDE first (sync/confirmMassDelete, server -> client).
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "helper/remote/endpoint_factory.hpp"
#include "helper/remote/local_endpoint.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/server/host_session.hpp"
#include "helper/server/project_lookup.hpp"
#include "helper/server/server.hpp"
#include "helper/sync/sync_engine.hpp"
#include "helper/sync/mapping_target.hpp"
#include "protocol/binding_table.hpp"
#include "protocol/json_reader.hpp"
#include "protocol/outgoing_requests.hpp"

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
inline constexpr const char* kConfirmMassDelete = "sync/confirmMassDelete";

struct SyncPushParams {
  std::optional<std::string> path;  // the project (ferry.json or its directory)
  bool dry_run = false;
  bool force = false;
  std::string deletes = "owned";  // owned | mirror | none
  bool confirm_mass_delete = false;
  std::vector<std::string> paths;  // only these (relative to the mapping); empty = all
};

std::optional<p::DecodeError> from_json(const json& j, SyncPushParams& out, const std::string& ptr) {
  p::ObjectReader r(j, ptr);
  r.optional("path", out.path);
  r.optional("dryRun", out.dry_run);
  r.optional("force", out.force);
  r.optional("delete", out.deletes);
  r.optional("confirmMassDelete", out.confirm_mass_delete);
  r.optional("paths", out.paths);
  r.check(out.deletes == "owned" || out.deletes == "mirror" || out.deletes == "none", "delete",
          "expected \"owned\", \"mirror\" or \"none\"");
  return r.error();
}

struct SyncPullParams {
  std::optional<std::string> path;
  std::vector<std::string> paths;
  bool dry_run = false;
  bool force = false;
};

std::optional<p::DecodeError> from_json(const json& j, SyncPullParams& out, const std::string& ptr) {
  p::ObjectReader r(j, ptr);
  r.optional("path", out.path);
  r.required("paths", out.paths);
  r.optional("dryRun", out.dry_run);
  r.optional("force", out.force);
  r.check(!out.paths.empty(), "paths", "expected at least one path");
  return r.error();
}

struct SyncProjectParams {
  std::optional<std::string> path;
};

std::optional<p::DecodeError> from_json(const json& j, SyncProjectParams& out, const std::string& ptr) {
  p::ObjectReader r(j, ptr);
  r.optional("path", out.path);
  return r.error();
}

struct FileSavedParams {
  std::string path;  // absolute, relative to the mapping, or a file:// URI
};

std::optional<p::DecodeError> from_json(const json& j, FileSavedParams& out, const std::string& ptr) {
  p::ObjectReader r(j, ptr);
  std::optional<std::string> path, uri;
  r.optional("path", path);
  r.optional("uri", uri);
  r.check(path || uri, "path", "expected path or uri");
  if (auto e = r.error()) return e;
  out.path = path ? *path : *uri;
  if (out.path.starts_with("file://")) out.path.erase(0, 7);
  return std::nullopt;
}

namespace {

class SyncService {
 public:
  SyncService(const ServerOptions& options, p::OutgoingRequests& client) : options_(options), client_(client) {}
  ~SyncService() {
    {
      std::lock_guard lock(save_mu_);
      stop_ = true;
    }
    save_cv_.notify_all();
    if (saver_.joinable()) saver_.join();
    std::lock_guard lock(run_mu_);
    if (endpoint_) endpoint_->close();
  }

  std::expected<json, ResponseError> push(const SyncPushParams& params, p::CallContext& ctx) {
    sync::SyncOptions o;
    o.dry_run = params.dry_run;
    o.force = params.force;
    o.only_paths = params.paths;
    o.deletes = params.deletes == "mirror" ? sync::DeleteMode::mirror
                : params.deletes == "none" ? sync::DeleteMode::none
                                           : sync::DeleteMode::owned;
    // confirmMassDelete: the caller already asked the user; otherwise ask the IDE now.
    const bool confirmed = params.confirm_mass_delete;
    o.confirm_mass_delete = [this, confirmed, &ctx](const std::string& reason, std::size_t n) {
      return confirmed || ask_mass_delete(reason, n, ctx.cancellation());
    };
    return run(params.path, ctx, "Syncing", [&](sync::SyncEngine& e) { return e.push(o); }, o);
  }

  std::expected<json, ResponseError> pull(const SyncPullParams& params, p::CallContext& ctx) {
    sync::SyncOptions o;
    o.dry_run = params.dry_run;
    o.force = params.force;
    return run(params.path, ctx, "Pulling", [&](sync::SyncEngine& e) { return e.pull(params.paths, o); }, o);
  }

  json status() {
    json j;
    {
      std::lock_guard lock(save_mu_);
      j["pendingSaves"] = pending_;
      j["saving"] = saving_;
      j["lastSync"] = last_ ? *last_ : json(nullptr);
      if (!last_error_.empty()) j["lastError"] = last_error_;
    }
    std::unique_lock lock(run_mu_, std::try_to_lock);
    j["busy"] = !lock.owns_lock();
    if (lock.owns_lock()) {
      j["connected"] = endpoint_ && endpoint_->connected();
      if (endpoint_) j["endpoint"] = endpoint_->description();
    }
    return j;
  }

  // Waits for pending saves, then pushes the whole tree: the remote is up to date on return.
  std::expected<json, ResponseError> flush(const SyncProjectParams& params, p::CallContext& ctx) {
    {
      std::unique_lock lock(save_mu_);
      flush_now_ = true;
      save_cv_.notify_all();
      bool drained = save_cv_.wait_for(lock, kFlushTimeout, [&] {
        return (pending_.empty() && !saving_) || stop_ || ctx.cancelled();
      });
      if (ctx.cancelled()) return std::unexpected(p::cancelled_error("sync/flush"));
      if (!drained) return std::unexpected(ResponseError{p::error_code::kIoError, "sync/flush: pending saves did not finish", {}});
    }
    SyncPushParams all;
    all.path = params.path;
    return push(all, ctx);
  }

  void file_saved(const FileSavedParams& params) {
    std::lock_guard lock(save_mu_);
    pending_.insert(params.path);
    if (!saver_.joinable()) saver_ = std::thread([this] { save_loop(); });
    save_cv_.notify_all();
  }

 private:
  // The IDE's decision on held deletes; no client, an error or no answer keeps them held.
  bool ask_mass_delete(const std::string& reason, std::size_t n, const p::CancellationToken& cancel) {
    // target_: set by engine_for under run_mu_, which the push asking this holds.
    json params{{"reason", reason}, {"count", n}, {"root", target_.local_root.string()}};
    auto answer = client_.call(kConfirmMassDelete, std::move(params), kClientAnswerTimeout, cancel);
    if (!answer) {
      spdlog::warn("{}: deletes held: {}", kConfirmMassDelete, answer.error().message);
      return false;
    }
    if (!answer->is_object() || !answer->contains("accept") || !(*answer)["accept"].is_boolean()) {
      spdlog::warn("{}: unreadable answer {}; deletes held", kConfirmMassDelete, answer->dump());
      return false;
    }
    return (*answer)["accept"].get<bool>();
  }

  template <class Fn>
  std::expected<json, ResponseError> run(const std::optional<std::string>& project, p::CallContext& ctx,
                                         const std::string& title, Fn&& fn, sync::SyncOptions& o) {
    auto progress = ctx.progress();
    progress.begin(title);
    std::mutex pm;
    int last_pct = -1;
    o.progress = [&](std::uint64_t done, std::uint64_t total) {
      int pct = total ? static_cast<int>(done * 100 / total) : 100;
      std::lock_guard lock(pm);
      if (pct == last_pct) return;
      last_pct = pct;
      progress.report(fmt::format("{} / {} bytes", done, total), pct);
    };
    o.cancelled = [&ctx] { return ctx.cancelled(); };
    // A big remote tree is listed in pages: say how far it got rather than sit at 0% in silence
    // (a sync/push cancelled meanwhile stops between pages).
    o.listing_progress = [&](std::uint64_t listed) { progress.report(fmt::format("listing the remote: {} entries", listed)); };
    std::lock_guard lock(run_mu_);
    auto engine = engine_for(project);
    if (!engine) return std::unexpected(engine.error());
    auto s = fn(**engine);
    if (!s) return std::unexpected(ResponseError{p::error_code::kIoError, ctx.method() + ": " + s.error(), {}});
    progress.end(s->one_line());
    if (s->cancelled) return std::unexpected(p::cancelled_error(ctx.method()));
    json j = s->to_json();
    {
      std::lock_guard slock(save_mu_);
      last_ = j;
    }
    return j;
  }

  // Called under run_mu_: the endpoint for the project's first mapping, opened once.
  // The engine stays alive with its endpoint, so its manifest and index stay in memory.
  std::expected<sync::SyncEngine*, ResponseError> engine_for(const std::optional<std::string>& project) {
    auto config = lookup_project(project, options_);
    if (!config) return std::unexpected(config.error());
    const deploy::Mapping& m = config->mappings.front();
    sync::SyncTarget target = sync::mapping_target(*config, m);
    std::string key = config->host + "\n" + m.remote;
    if (!endpoint_ || !endpoint_->connected() || endpoint_key_ != key) {
      engine_.reset();  // it holds a reference to the endpoint
      if (endpoint_) endpoint_->close();
      if (config->host == "local") {
        endpoint_ = std::make_unique<remote::LocalEndpoint>(sync::local_endpoint_options(*config, m));
      } else {
        // The same resolution as host/connect and the CLI (helper/remote/endpoint_factory.hpp).
        auto ssh = remote::make_ssh_target("", "", std::nullopt, &*config);
        if (!ssh) return std::unexpected(ResponseError{p::error_code::kAgentUnavailable, "sync: " + ssh.error(), {}});
        endpoint_ = std::make_unique<remote::SshEndpoint>(remote::ssh_endpoint_options(*ssh));
      }
      endpoint_key_ = key;
      auto info = endpoint_->connect();
      if (!info) {
        auto err = info.error();
        endpoint_.reset();
        return std::unexpected(err);
      }
    }
    target_ = target;
    auto same = [](const sync::SyncTarget& a, const sync::SyncTarget& b) {
      return a.local_root == b.local_root && a.remote_base == b.remote_base && a.host == b.host &&
             a.remote_root == b.remote_root && a.exclude == b.exclude && a.protect == b.protect;
    };
    if (!engine_ || !same(engine_->target(), target)) {
      engine_.reset();
      engine_ = std::make_unique<sync::SyncEngine>(*endpoint_, target);
      // A live engine watches its tree: a no-op push then walks nothing (docs/sync.md).
      if (auto w = engine_->watch_local_tree(); !w) spdlog::warn("sync: no watch of {} ({}); every push walks the tree", target.local_root.string(), w.error());
    }
    return engine_.get();
  }

  void save_loop() {
    std::unique_lock lock(save_mu_);
    while (!stop_) {
      save_cv_.wait(lock, [&] { return stop_ || !pending_.empty(); });
      if (stop_) return;
      // Coalesce the burst: wait out the window, and again while it keeps growing, unless a
      // flush wants it now.
      const auto burst_end = std::chrono::steady_clock::now() + kSaveBurstMax;
      for (std::size_t seen = 0; pending_.size() != seen && std::chrono::steady_clock::now() < burst_end;) {
        seen = pending_.size();
        if (save_cv_.wait_for(lock, kSaveCoalesce, [&] { return stop_ || flush_now_; })) break;
      }
      flush_now_ = false;
      std::vector<std::string> paths;
      for (const auto& p : pending_) paths.push_back(p);
      pending_.clear();
      saving_ = true;
      lock.unlock();
      std::string error;
      std::optional<json> summary;
      {
        std::lock_guard run(run_mu_);
        auto engine = engine_for(std::nullopt);
        if (!engine) {
          error = engine.error().message;
        } else {
          sync::SyncOptions o;
          // Saves that delete many files (a folder removed in the IDE) ask like a push; held
          // deletes otherwise wait for the next sync/push.
          o.confirm_mass_delete = [this](const std::string& reason, std::size_t n) {
            return ask_mass_delete(reason, n, p::CancellationToken{});
          };
          for (auto& p : paths) {
            fs::path fp(p);
            if (fp.is_absolute()) {
              auto rel = fp.lexically_relative(target_.local_root).generic_string();
              if (rel.empty() || rel.starts_with("..")) continue;  // outside the mapping
              p = rel;
            }
            o.only_paths.push_back(p);
          }
          if (!o.only_paths.empty()) {
            auto s = (*engine)->push(o);
            if (s) summary = s->to_json();
            else error = s.error();
          }
        }
      }
      lock.lock();
      saving_ = false;
      if (summary) last_ = summary;
      last_error_ = error;
      if (!error.empty()) spdlog::warn("sync on save: {}", error);
      save_cv_.notify_all();
    }
  }

  const ServerOptions& options_;
  p::OutgoingRequests& client_;
  std::mutex run_mu_;  // one sync at a time; guards endpoint_ and target_
  std::unique_ptr<remote::Endpoint> endpoint_;
  std::string endpoint_key_;
  sync::SyncTarget target_;
  std::unique_ptr<sync::SyncEngine> engine_;  // after endpoint_: destroyed before it

  std::mutex save_mu_;
  std::condition_variable save_cv_;
  std::set<std::string> pending_;
  bool saving_ = false, stop_ = false, flush_now_ = false;
  std::optional<json> last_;
  std::string last_error_;
  std::thread saver_;
};

}  // namespace

void bind_sync_methods(p::BindingTable& table, const ServerOptions& options, p::OutgoingRequests& client) {
  auto service = std::make_shared<SyncService>(options, client);
  table.request<SyncPushParams, json>(
      "sync/push", [service](const SyncPushParams& params, p::CallContext& ctx) { return service->push(params, ctx); },
      p::Execution::worker);
  table.request<SyncPullParams, json>(
      "sync/pull", [service](const SyncPullParams& params, p::CallContext& ctx) { return service->pull(params, ctx); },
      p::Execution::worker);
  table.request<SyncProjectParams, json>(
      "sync/status",
      [service](const SyncProjectParams&, p::CallContext&) -> std::expected<json, ResponseError> { return service->status(); },
      p::Execution::worker);
  table.request<SyncProjectParams, json>(
      "sync/flush", [service](const SyncProjectParams& params, p::CallContext& ctx) { return service->flush(params, ctx); },
      p::Execution::worker);
  table.notification<FileSavedParams>(
      "sync/fileSaved", [service](const FileSavedParams& params, p::CallContext&) { service->file_saved(params); });
  table.reserve_name(kConfirmMassDelete);
}

}  // namespace ferry::server
