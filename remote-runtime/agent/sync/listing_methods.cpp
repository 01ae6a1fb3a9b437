// sync/state and sync/list: the helper's "did anyone write since my last push?" and the tree
// listing (whole, paged by cursor, or just a few paths for a sync on save). Rows are arrays, not
// objects, so a 100k-file listing stays small on the wire.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include <spdlog/spdlog.h>

#include "common/posix/stat_times.hpp"
#include "protocol/delta/delta_types.hpp"
#include "protocol/python_sources.hpp"
#include "remote-runtime/agent/sync/sync_bindings.hpp"
#include "remote-runtime/agent/sync/sync_generation.hpp"

namespace ferry::agent::sync {
namespace {

// How long a push's first look waits for another agent's writes to finish.
constexpr std::chrono::milliseconds kWriterWait{10'000};

// A push starts by looking at the tree: writes still running for a helper that went away land
// first, not between this look and the push's plan (sync_generation.hpp's write gate).
void wait_out_writers(const Target& t) {
  if (t.source) return;
  if (!wait_for_writers(t.w(), kWriterWait)) spdlog::warn("{}: another agent kept writing under '{}' for {} s; looking anyway", t.method, t.base, kWriterWait.count() / 1000);
}

Reply<wire::StateResult> state(SyncContext& ctx, const wire::StateParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  wait_out_writers(*t);
  auto g = read_generation(t->w());
  if (!g) return std::unexpected(t->io_error(t->base, g.error()));
  return wire::StateResult{g->epoch, g->generation};
}

wire::ListEntry row_of(const TreeEntry& e) {
  wire::ListEntry row{e.path, static_cast<int>(e.kind), e.mode, e.size, e.mtime_ns, e.link_target, std::nullopt};
  if (e.hash) std::copy(e.hash->begin(), e.hash->end(), row.hash.emplace().begin());
  return row;
}

std::vector<wire::ListEntry> rows(const std::vector<TreeEntry>& listed, bool python_only) {
  std::vector<wire::ListEntry> out;
  out.reserve(listed.size());
  for (const auto& e : listed) {
    if (python_only && (e.kind != TreeEntryKind::file || !protocol::is_python_source_file(e.path) ||
                        e.size > protocol::kMaxPythonSourceFileBytes))
      continue;
    out.push_back(row_of(e));
  }
  return out;
}

// One page of a listing; the cursor is there while more remains.
wire::ListResult page(SyncContext& ctx, const std::shared_ptr<Listing>& l, std::int64_t id, std::uint64_t swept) {
  const auto budget = std::chrono::milliseconds(l->page_ms);
  wire::ListResult out;
  out.entries = rows(l->lister->next(l->page_entries, TreeLister::Clock::now() + budget), l->python_only);
  out.swept = swept;
  out.listed = l->lister->listed();
  out.other_filesystems = l->lister->take_other_filesystems();
  if (l->lister->done()) ctx.drop_listing(id);
  else out.cursor = id;
  return out;
}

Reply<wire::ListResult> continue_listing(SyncContext& ctx, const wire::ListParams& p) {
  const std::int64_t id = *p.cursor;
  auto l = ctx.find_listing(id, p.cancel);
  if (!l)
    return std::unexpected(invalid_params(wire::method::kList, "no listing " + std::to_string(id) +
                                                                   " (finished, cancelled, or dropped for newer ones); start a new listing"));
  if (p.cancel) {
    wire::ListResult out;
    out.cancelled = true;
    return out;
  }
  return page(ctx, l, id, 0);
}

// One path of a sync on save: a few stats whatever the tree size. Missing or special: no row.
std::optional<wire::ListEntry> stat_row(const Target& t, const std::string& path, const ListOptions& opt) {
  auto resolved = t.resolver().resolve(t.wire_path(path));
  if (!resolved) return std::nullopt;
  struct stat st {};
  if (::lstat(resolved->absolute.c_str(), &st) != 0) return std::nullopt;
  int kind = S_ISREG(st.st_mode) ? 0 : S_ISDIR(st.st_mode) ? 1 : S_ISLNK(st.st_mode) ? 2 : -1;
  if (kind < 0) return std::nullopt;
  wire::ListEntry row{path, kind, static_cast<std::uint32_t>(st.st_mode & 07777), 0, 0, {}, std::nullopt};
  row.size = S_ISDIR(st.st_mode) ? 0 : static_cast<std::uint64_t>(st.st_size);
  row.mtime_ns = posix::mtime_of(st);
  if (kind == 2) {
    row.link_target.resize(static_cast<std::size_t>(st.st_size) + 1);
    ssize_t n = ::readlink(resolved->absolute.c_str(), row.link_target.data(), row.link_target.size());
    row.link_target.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    row.size = row.link_target.size();
  }
  // In pieces, not the whole file in memory: a saved file can be a 2 GB checkpoint.
  if (kind == 0 && opt.hash_if(path)) row.hash = hash_file_at(AT_FDCWD, resolved->absolute.c_str(), row.size, row.size > opt.hash_at_most);
  return row;
}

// The walk's predicates, reading the options kept in the listing (its pages may come later).
ListOptions options_of(const std::shared_ptr<Listing>& listing) {
  ListOptions opt;
  opt.hash_at_most = listing->hash_at_most;
  opt.hash_if = [l = listing.get()](const std::string& path) {
    if (l->python_only && !protocol::is_python_source_file(path)) return false;  // never hash a 1 GiB .so
    if (l->hash_all || !l->known.contains(path)) return true;
    for (const auto& u : l->hash_under)
      if (u.empty() || u == "." || path == u || (path.starts_with(u) && path.size() > u.size() && path[u.size()] == '/'))
        return true;
    return false;
  };
  opt.prune = [l = listing.get()](const std::string& path) {
    return l->prune.contains(path) || (l->python_only && protocol::is_python_source_pruned_dir(path));
  };
  return opt;
}

Reply<wire::ListResult> list(SyncContext& ctx, const wire::ListParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  if (p.cursor) return continue_listing(ctx, p);
  wait_out_writers(*t);
  if (t->source && (p.only || p.sweep)) return std::unexpected(invalid_params(c.method(), "'only' and 'sweep' do not apply to a read-only source"));
  std::uint64_t swept = 0;
  if (p.sweep)
    if (auto s = t->w().sweep_temp_files()) swept = *s;
  auto listing = std::make_shared<Listing>();
  if (p.known) listing->known.insert(p.known->begin(), p.known->end());
  if (p.prune) listing->prune.insert(p.prune->begin(), p.prune->end());
  if (p.hash_under) listing->hash_under = *p.hash_under;
  listing->hash_all = p.hash_all;
  if (p.hash_at_most) listing->hash_at_most = *p.hash_at_most;
  listing->python_only = t->source.has_value();
  ListOptions opt = options_of(listing);
  if (p.only) {
    wire::ListResult out;
    for (const auto& path : *p.only)
      if (auto row = stat_row(*t, path, opt)) out.entries.push_back(std::move(*row));
    out.swept = swept;
    return out;
  }
  // The stamp as of the walk's start (no ferry write runs now: the gate was waited out, and this
  // agent's own writes before this barrier are done).
  std::optional<wire::StateResult> stamp;
  if (!t->source)
    if (auto g = read_generation(t->w())) stamp = wire::StateResult{g->epoch, g->generation};
  auto lister = TreeLister::open(t->w(), std::move(opt));
  if (!lister) return std::unexpected(t->io_error(t->base, lister.error()));
  if (!p.page_entries && !p.page_ms) {
    // A helper that does not page: everything in one reply, sorted, as before.
    std::vector<TreeEntry> all;
    while (!lister->done()) {
      auto part = lister->next(std::size_t(-1));
      std::move(part.begin(), part.end(), std::back_inserter(all));
    }
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
    wire::ListResult out;
    out.entries = rows(all, listing->python_only);
    out.swept = swept;
    out.other_filesystems = lister->take_other_filesystems();
    out.stamp = std::move(stamp);
    return out;
  }
  listing->page_entries = static_cast<std::size_t>(std::clamp<std::int64_t>(p.page_entries.value_or(kMaxListPageEntries), 1, kMaxListPageEntries));
  listing->page_ms = std::clamp<std::int64_t>(p.page_ms.value_or(1000), 1, 60'000);
  listing->lister.emplace(std::move(*lister));
  const std::int64_t id = ctx.add_listing(listing);
  auto first = page(ctx, listing, id, swept);
  first.stamp = std::move(stamp);
  return first;
}

}  // namespace

void bind_listing_methods(BindingTable& table, SyncContext& ctx) {
  table.request<wire::StateParams, wire::StateResult>(
      wire::method::kState, [&ctx](const wire::StateParams& p, CallContext& c) { return state(ctx, p, c); });
  table.request<wire::ListParams, wire::ListResult>(
      wire::method::kList, [&ctx](const wire::ListParams& p, CallContext& c) { return list(ctx, p, c); });
}

}  // namespace ferry::agent::sync
