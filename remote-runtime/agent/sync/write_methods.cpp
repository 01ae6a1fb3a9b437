// sync/writeBatch, sync/prepareDelta, sync/applyDelta and the streamed file methods (fileBegin, filePart,
// fileAppend, fileCommit, fileAbort): every byte a push writes, decompressed here and landed by
// FileWriter's atomic, verified writes.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "protocol/payload_codec.hpp"
#include "remote-runtime/agent/sync/sync_bindings.hpp"

namespace ferry::agent::sync {
namespace {

FileAttrs attrs_of(const wire::FileAttrs& a) { return FileAttrs{a.size, a.hash, a.mode, a.mtime_ns}; }

std::optional<Precondition> precondition_of(const std::optional<wire::Expect>& e) {
  if (!e) return std::nullopt;
  return Precondition{e->exists, e->exists ? e->size : 0, e->exists ? e->mtime_ns : 0};
}

std::expected<std::vector<std::uint8_t>, std::string> unpack(const wire::Bytes& data, std::uint64_t size) {
  return protocol::decompress_payload(data.data(), data.size(), size);
}

// Decompressed concurrently; then written as one batch (see FileWriter::write_batch: the fsyncs
// are paid once per batch and directory, not twice per file). A malformed or undecodable file
// gets its own failed entry; the others are still written.
Reply<wire::PathResults> write_batch(SyncContext& ctx, const wire::WriteBatchParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  GenerationBump bump(*t);
  const auto& files = p.files;
  std::vector<wire::PathResult> results(files.size());
  std::vector<std::vector<std::uint8_t>> contents(files.size());
  std::vector<BatchFile> batch;
  std::vector<std::size_t> batch_index;  // batch entry -> position in `files`
  std::mutex batch_mu;
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < files.size();) {
      const wire::WriteFile& f = files[i];
      if (f.invalid) {
        results[i] = t->error_entry(f.path, {WriteErrc::invalid_path, *f.invalid});
        continue;
      }
      auto bytes = unpack(f.data, f.attrs.size);
      if (!bytes) {
        results[i] = t->error_entry(f.path, {WriteErrc::bad_delta, bytes.error()});
        continue;
      }
      contents[i] = std::move(*bytes);
      std::lock_guard lock(batch_mu);
      batch.push_back(BatchFile{f.path, contents[i], attrs_of(f.attrs), precondition_of(f.expect)});
      batch_index.push_back(i);
    }
  };
  {
    std::vector<std::jthread> pool;
    const std::size_t n = std::min<std::size_t>(kWriteThreads, files.size());
    for (std::size_t k = 1; k < n; ++k) pool.emplace_back(worker);
    worker();
  }
  std::uint64_t written = 0;
  auto done = t->w().write_batch(batch, static_cast<unsigned>(kWriteThreads));
  for (std::size_t k = 0; k < batch.size(); ++k) {
    const std::size_t i = batch_index[k];
    if (!done[k]) {
      results[i] = t->error_entry(files[i].path, done[k].error());
      continue;
    }
    written += batch[k].attrs.size;
    results[i] = ok_entry(files[i].path);
  }
  return wire::PathResults{std::move(results), written};
}

Reply<wire::PathOk> apply_delta(SyncContext& ctx, const wire::ApplyDeltaParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  GenerationBump bump(*t);
  auto delta = unpack(p.delta, p.delta_size);
  if (!delta) return std::unexpected(invalid_params(c.method() + " '" + p.path + "'", delta.error()));
  auto done = t->w().apply_delta(p.path, *delta, attrs_of(p.attrs), precondition_of(p.expect));
  if (!done) return std::unexpected(t->io_error(p.path, done.error()));
  return wire::PathOk{p.path};
}

// Not a mutation: the copy is a temp file nobody lists, committed (or deleted) by what follows.
Reply<wire::PrepareDeltaResult> prepare_delta(SyncContext& ctx, const wire::PrepareDeltaParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  if (p.cancel) {
    t->w().drop_prepared(p.path);
    return wire::PrepareDeltaResult{false};
  }
  auto started = t->w().prepare_delta_base(p.path, precondition_of(p.expect));
  if (!started) return std::unexpected(t->io_error(p.path, started.error()));
  return wire::PrepareDeltaResult{*started};
}

Reply<wire::FileBeginResult> file_begin(SyncContext& ctx, const wire::FileBeginParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  if (auto full = ctx.upload_room()) return std::unexpected(invalid_params(c.method(), *full));
  auto pending = t->w().begin_file(p.path, attrs_of(p.attrs));
  if (!pending) return std::unexpected(t->io_error(p.path, pending.error()));
  auto [handle, temp] = ctx.add_upload(std::make_shared<Upload>(p.path, std::move(*pending), precondition_of(p.expect), p.attrs.size));
  // The temp file's name lets sibling agents (other channels) write parts (sync/filePart).
  return wire::FileBeginResult{handle, std::move(temp)};
}

// Part of a file another agent of this helper is receiving (its sync/fileBegin named the temp
// file): written in place here, recorded there by a placed sync/fileAppend.
Reply<wire::OkResult> file_part(SyncContext& ctx, const wire::FilePartParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  if (p.raw_size > kMaxSyncPayload) return std::unexpected(invalid_params(c.method(), "part too large"));
  auto scratch = ctx.scratch().take();
  auto bytes = protocol::payload_bytes(p.data.bytes(), p.stored, p.raw_size, scratch.get());
  if (!bytes) return std::unexpected(invalid_params(c.method(), bytes.error()));
  if (auto done = t->w().write_part(p.path, p.temp, p.offset, *bytes); !done) return std::unexpected(t->io_error(p.path, done.error()));
  return wire::OkResult{};
}

Reply<wire::FileAppendResult> file_append(SyncContext& ctx, const wire::FileAppendParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  auto held = ctx.find_upload(p.handle, false);
  if (!held) return std::unexpected(invalid_params(c.method(), "no such upload"));
  Upload& up = *held;
  // A failed append ends the upload; appends still running elsewhere hold it until they return.
  auto fail = [&](ResponseError e) {
    ctx.drop_upload(p.handle, held);
    return std::unexpected(std::move(e));
  };
  // With `offset`, chunks may come in any order (the helper keeps several in flight); without
  // it, each goes after the furthest byte so far (the older, one-at-a-time helper).
  const auto& offset = p.offset;
  if (p.raw_size > kMaxSyncPayload || (offset && (*offset > up.size || p.raw_size > up.size - *offset)))
    return fail(invalid_params(c.method(), "bytes past the announced size"));
  if (p.placed) {
    // A sibling agent wrote these bytes (sync/filePart): only the bookkeeping and the hash.
    std::unique_lock lock(up.mu);
    if (auto done = up.file.mark_placed(*offset, p.raw_size); !done) {
      lock.unlock();
      return fail(t->io_error(up.path, done.error()));
    }
    up.received = up.file.received();
    return wire::FileAppendResult{up.received};
  }
  // Decompressed outside the upload's lock: that is the work appends share between workers.
  auto scratch = ctx.scratch().take();
  auto bytes = protocol::payload_bytes(p.data->bytes(), p.stored, p.raw_size, scratch.get());
  if (!bytes) return std::unexpected(invalid_params(c.method(), bytes.error()));
  std::unique_lock lock(up.mu);
  if (!offset && p.raw_size > up.size - up.received) {
    lock.unlock();
    return fail(invalid_params(c.method(), "bytes past the announced size"));
  }
  if (auto done = offset ? up.file.write_at(*offset, *bytes) : up.file.write(*bytes); !done) {
    lock.unlock();
    return fail(t->io_error(up.path, done.error()));
  }
  up.received = up.file.received();
  return wire::FileAppendResult{up.received};
}

// Commit and abort finish the upload; later requests for it find nothing. (The scheduler ran
// them after every earlier append of this handle.)
Reply<wire::PathOk> file_commit(SyncContext& ctx, const wire::FileHandleParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  GenerationBump bump(*t);
  auto held = ctx.find_upload(p.handle, true);
  if (!held) return std::unexpected(invalid_params(c.method(), "no such upload"));
  std::lock_guard lock(held->mu);
  if (auto done = held->file.commit(held->expect); !done) return std::unexpected(t->io_error(held->path, done.error()));
  return wire::PathOk{held->path};
}

Reply<wire::OkResult> file_abort(SyncContext& ctx, const wire::FileHandleParams& p, CallContext& c) {
  auto t = ctx.open(c.method(), p.where);
  if (!t) return std::unexpected(t.error());
  auto held = ctx.find_upload(p.handle, true);
  if (!held) return std::unexpected(invalid_params(c.method(), "no such upload"));
  std::lock_guard lock(held->mu);
  held->file.abort();  // removes its temp file
  return wire::OkResult{};
}

}  // namespace

void bind_write_methods(BindingTable& table, SyncContext& ctx) {
  table.request<wire::WriteBatchParams, wire::PathResults>(
      wire::method::kWriteBatch, [&ctx](const wire::WriteBatchParams& p, CallContext& c) { return write_batch(ctx, p, c); });
  table.request<wire::ApplyDeltaParams, wire::PathOk>(
      wire::method::kApplyDelta, [&ctx](const wire::ApplyDeltaParams& p, CallContext& c) { return apply_delta(ctx, p, c); });
  table.request<wire::PrepareDeltaParams, wire::PrepareDeltaResult>(
      wire::method::kPrepareDelta, [&ctx](const wire::PrepareDeltaParams& p, CallContext& c) { return prepare_delta(ctx, p, c); });
  table.request<wire::FileBeginParams, wire::FileBeginResult>(
      wire::method::kFileBegin, [&ctx](const wire::FileBeginParams& p, CallContext& c) { return file_begin(ctx, p, c); });
  table.request<wire::FilePartParams, wire::OkResult>(
      wire::method::kFilePart, [&ctx](const wire::FilePartParams& p, CallContext& c) { return file_part(ctx, p, c); });
  table.request<wire::FileAppendParams, wire::FileAppendResult>(
      wire::method::kFileAppend, [&ctx](const wire::FileAppendParams& p, CallContext& c) { return file_append(ctx, p, c); });
  table.request<wire::FileHandleParams, wire::PathOk>(
      wire::method::kFileCommit, [&ctx](const wire::FileHandleParams& p, CallContext& c) { return file_commit(ctx, p, c); });
  table.request<wire::FileHandleParams, wire::OkResult>(
      wire::method::kFileAbort, [&ctx](const wire::FileHandleParams& p, CallContext& c) { return file_abort(ctx, p, c); });
}

}  // namespace ferry::agent::sync
