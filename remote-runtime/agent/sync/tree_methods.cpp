// sync/mkdir, sync/symlink, sync/setAttrs and sync/delete: the tree operations of a push, each
// answering path by path (one failed path never stops the others).
#include "remote-runtime/agent/sync/sync_bindings.hpp"

namespace ferry::agent::sync {
namespace {

wire::PathResult outcome(const Target& t, const std::string& path, const std::expected<void, WriteError>& done) {
  return done ? ok_entry(path) : t.error_entry(path, done.error());
}

Reply<wire::PathResults> mkdir(SyncContext& ctx, const wire::MkdirParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  GenerationBump bump(*t);
  wire::PathResults out;
  for (const auto& d : p.dirs) {
    const std::uint32_t mode = d.mode.value_or(0755);
    auto done = t->w().make_dirs(d.path, mode);
    // make_dirs leaves an existing dir's mode alone; the helper's plan wants it exact.
    if (done) done = t->w().set_attrs(d.path, mode, std::nullopt);
    out.results.push_back(outcome(*t, d.path, done));
  }
  return out;
}

Reply<wire::PathResults> symlink(SyncContext& ctx, const wire::SymlinkParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  GenerationBump bump(*t);
  wire::PathResults out;
  for (const auto& l : p.links) out.results.push_back(outcome(*t, l.path, t->w().make_symlink(l.path, l.target)));
  return out;
}

Reply<wire::PathResults> set_attrs(SyncContext& ctx, const wire::SetAttrsParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  GenerationBump bump(*t);
  wire::PathResults out;
  for (const auto& a : p.entries) out.results.push_back(outcome(*t, a.path, t->w().set_attrs(a.path, a.mode, a.mtime_ns)));
  return out;
}

// Files and links first, then directories (deepest first, as the helper orders them). A file
// with an `expect` entry must still be what ferry wrote.
Reply<wire::PathResults> remove(SyncContext& ctx, const wire::DeleteParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  GenerationBump bump(*t);
  wire::PathResults out;
  for (const auto& path : p.paths) {
    std::optional<Precondition> pre;
    if (auto it = p.expect.find(path); it != p.expect.end())
      pre = Precondition{it->second.exists, it->second.exists ? it->second.size : 0, it->second.exists ? it->second.mtime_ns : 0};
    out.results.push_back(outcome(*t, path, t->w().remove(path, pre)));
  }
  for (const auto& dir : p.dirs) out.results.push_back(outcome(*t, dir, t->w().remove_dir(dir)));
  return out;
}

}  // namespace

void bind_tree_methods(BindingTable& table, SyncContext& ctx) {
  table.request<wire::MkdirParams, wire::PathResults>(
      wire::method::kMkdir, [&ctx](const wire::MkdirParams& p, CallContext& c) { return mkdir(ctx, p, c); });
  table.request<wire::SymlinkParams, wire::PathResults>(
      wire::method::kSymlink, [&ctx](const wire::SymlinkParams& p, CallContext& c) { return symlink(ctx, p, c); });
  table.request<wire::SetAttrsParams, wire::PathResults>(
      wire::method::kSetAttrs, [&ctx](const wire::SetAttrsParams& p, CallContext& c) { return set_attrs(ctx, p, c); });
  table.request<wire::DeleteParams, wire::PathResults>(
      wire::method::kDelete, [&ctx](const wire::DeleteParams& p, CallContext& c) { return remove(ctx, p, c); });
}

}  // namespace ferry::agent::sync
