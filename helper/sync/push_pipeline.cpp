// The push's transfer stage: see push_pipeline.hpp. The order of remote steps follows
// docs/sync.md ("For the transfer pipeline").
#include "helper/sync/push_pipeline.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/full_io.hpp"
#include "common/file_times.hpp"
#include "common/open_file.hpp"
#include "common/unique_fd.hpp"
#include "common/mapped_file.hpp"
#include "helper/sync/sent_copy.hpp"
#include "protocol/delta/delta.hpp"
#include "protocol/payload_codec.hpp"

namespace ferry::sync {
using namespace engine_parts;
namespace method = wire::method;

PushPipeline::PushPipeline(Context context, std::uint64_t total_bytes) : c_(std::move(context)) {
  prog_.manifest = &c_.manifest;
  prog_.summary = &c_.summary;
  prog_.options = &c_.options;
  prog_.total = total_bytes;
  cache_dir_ = c_.root / ".ferry" / "sent";
  mutations_at_start_ = c_.client.mutations();
}

// --- The agent calls ---------------------------------------------------------------------

wire::Where PushPipeline::where() const { return wire::Where::at_base(c_.base); }

wire::FileAttrs PushPipeline::attrs_of(const FileMeta& m) { return wire::FileAttrs{m.size, *m.hash, m.mode, m.mtime_ns}; }

PushPipeline::Results PushPipeline::call_delete(const std::vector<std::string>& paths) {
  return c_.client.remove(wire::DeleteParams{where(), paths, {}, {}});
}

PushPipeline::Results PushPipeline::call_delete(const std::vector<std::string>& paths, const std::vector<std::string>& dirs,
                                                std::map<std::string, wire::Expect> expect) {
  return c_.client.remove(wire::DeleteParams{where(), paths, dirs, std::move(expect)});
}

PushPipeline::Results PushPipeline::call_mkdir(std::vector<wire::MkdirEntry> dirs) {
  return c_.client.mkdir(wire::MkdirParams{where(), std::move(dirs)});
}

PushPipeline::Results PushPipeline::call_write_batch(std::vector<wire::WriteFile> files) {
  return c_.client.write_batch(wire::WriteBatchParams{where(), std::move(files)}, kBigCallTimeout);
}

PushPipeline::Results PushPipeline::call_symlink(std::vector<wire::SymlinkEntry> links) {
  return c_.client.symlink(wire::SymlinkParams{where(), std::move(links)});
}

PushPipeline::Results PushPipeline::call_set_attrs(std::vector<wire::SetAttrsEntry> entries) {
  return c_.client.set_attrs(wire::SetAttrsParams{where(), std::move(entries)});
}

std::expected<wire::FileBeginResult, ResponseError> PushPipeline::call_file_begin(const Transfer& t) {
  return c_.client.file_begin(wire::FileBeginParams{where(), t.path, attrs_of(t.local), expect_of(c_.remote, t.path)});
}

std::expected<void, ResponseError> PushPipeline::call_file_part(std::size_t lane, const std::string& path, const std::string& temp,
                                                                std::uint64_t offset, std::size_t raw_size,
                                                                std::vector<std::uint8_t> packed, bool stored) {
  return c_.client.file_part(lane, wire::FilePartParams{where(), path, temp, offset, raw_size, std::move(packed), stored},
                             kBigCallTimeout);
}

std::expected<wire::FileAppendResult, ResponseError> PushPipeline::call_file_append(wire::FileAppendParams append) {
  return c_.client.file_append(std::move(append), kBigCallTimeout);
}

std::expected<void, ResponseError> PushPipeline::call_file_abort(std::int64_t handle) { return c_.client.file_abort(where(), handle); }

std::expected<wire::PathOk, ResponseError> PushPipeline::call_file_commit(std::int64_t handle) {
  return c_.client.file_commit(where(), handle, kBigCallTimeout);
}

PushPipeline::Signature PushPipeline::call_signature(const std::string& path) {
  return c_.client.signature(wire::SignatureParams{where(), path, std::nullopt, std::nullopt, std::nullopt}, kBigCallTimeout);
}

PushPipeline::Signature PushPipeline::call_coarse_signature(const std::string& path) {
  return c_.client.signature(wire::SignatureParams{where(), path, kCoarseBlock, 8, std::nullopt}, kBigCallTimeout);
}

PushPipeline::Signature PushPipeline::call_fine_signatures(const std::string& path, std::vector<wire::Range> ranges) {
  return c_.client.signature(wire::SignatureParams{where(), path, kFineBlock, 8, std::move(ranges)}, kBigCallTimeout);
}

std::expected<wire::PathOk, ResponseError> PushPipeline::call_apply_delta(const Transfer& t, std::vector<std::uint8_t> packed,
                                                                          std::uint64_t delta_size) {
  return c_.client.apply_delta(
      wire::ApplyDeltaParams{where(), t.path, attrs_of(t.local), expect_of(c_.remote, t.path), std::move(packed), delta_size},
      kBigCallTimeout);
}

// --- What every job shares ---------------------------------------------------------------

// A reply with per-path results: `on_ok` for each written path, conflicts and failures into
// the summary; a failed request is one error.
void PushPipeline::results_of(std::string_view method, const Results& reply, const std::function<void(const std::string&)>& on_ok) {
  if (!reply) {
    prog_.note_no_space(reply.error());
    prog_.error(fmt::format("{}: {}", method, reply.error().message));
    return;
  }
  for (const auto& r : reply->results) {
    if (r.ok) {
      on_ok(r.path);
    } else if (r.code == "conflict") {
      std::lock_guard lock(prog_.mu);
      c_.summary.conflicts.push_back({r.path, ConflictKind::changed_remotely, r.message.value_or("changed on the remote during the sync")});
    } else {
      prog_.note_no_space(r);
      prog_.error(fmt::format("{} '{}': {}", method, r.path, r.message.value_or("failed")));
    }
  }
}

void PushPipeline::record(const std::string& path, const FileMeta& meta) {
  std::lock_guard lock(prog_.mu);
  c_.manifest.record(path, meta);
}

// The delta base for the next edit of this file, so it needs no signature round trip.
void PushPipeline::keep_copy(const FileMeta& local, std::span<const std::uint8_t> bytes) {
  if (local.size < c_.delta_min_size || local.size > c_.options.cache_max_bytes / 4 || !local.hash) return;
  (void)write_file_atomically(cache_dir_ / to_hex(*local.hash),
                              std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

void PushPipeline::add_wire(std::uint64_t bytes) {
  std::lock_guard lock(prog_.mu);
  c_.summary.bytes_on_wire += bytes;
}

// Changed since the scan or while read: the next sync sends it.
void PushPipeline::unstable(const std::string& path) {
  std::lock_guard lock(prog_.mu);
  c_.summary.unstable.push_back(path);
}

// --- 5a, 5b: queueing and running ----------------------------------------------------------

void PushPipeline::replace(const std::vector<std::string>& paths) {
  if (paths.empty()) return;
  auto reply = call_delete(paths);
  results_of(method::kDelete, reply, [&](const std::string& p) {
    std::lock_guard lock(prog_.mu);
    c_.manifest.forget(p);
  });
}

// The directories go first but are not waited for: a batch whose files reach the agent first
// creates their parents itself (0755), and sync/mkdir then sets the exact mode of a directory
// that exists, so either order ends the same. Meanwhile the first batches are read and
// compressed (1100 directories took the agent ~17 ms, the helper idle).
void PushPipeline::queue_mkdirs(const std::vector<std::string>& dirs) {
  if (dirs.empty()) return;
  jobs_.push_back([this, &dirs] {
    std::vector<wire::MkdirEntry> list;
    list.reserve(dirs.size());
    for (const auto& d : dirs) list.push_back({d, c_.local.at(d).mode});
    auto reply = call_mkdir(std::move(list));
    results_of(method::kMkdir, reply, [&](const std::string& p) {
      record(p, c_.local.at(p));
      std::lock_guard lock(prog_.mu);
      ++c_.summary.dirs_made;
    });
    spdlog::debug("sync: mkdirs done");
  });
}

void PushPipeline::queue_whole(const std::vector<Transfer>& files) {
  const std::uint64_t stream_above = c_.options.stream_above;
  std::vector<std::vector<const Transfer*>> batches(1);
  std::uint64_t batch_bytes = 0;
  // Bulk lanes (a long link) open while the first jobs run, so they are up for the big files.
  if (std::any_of(files.begin(), files.end(), [&](const Transfer& t) {
        return t.local.size > stream_above && c_.client.lanes_pay_for(t.local.size, c_.options.cpu_lanes_above);
      }))
    (void)c_.client.bulk_lanes();
  for (const auto& t : files) {
    if (t.local.size > stream_above) {
      jobs_.push_back([this, tp = &t] { stream_file(*tp); });
      continue;
    }
    if (!batches.back().empty() && (batches.back().size() >= kBatchFiles || batch_bytes + t.local.size > kBatchBytes)) {
      batches.emplace_back();
      batch_bytes = 0;
    }
    batches.back().push_back(&t);
    batch_bytes += t.local.size;
  }
  for (auto& batch : batches) {
    if (batch.empty()) continue;
    jobs_.push_back([this, batch] { send_batch(batch); });
  }
}

void PushPipeline::queue_deltas(const std::vector<Transfer>& files) {
  for (const auto& t : files) jobs_.push_back([this, tp = &t] { send_delta(*tp); });
}

void PushPipeline::queue_symlinks(const std::vector<Transfer>& links) {
  if (links.empty()) return;
  jobs_.push_back([this, &links] {
    std::vector<wire::SymlinkEntry> list;
    list.reserve(links.size());
    for (const auto& t : links) list.push_back({t.path, t.local.link_target});
    auto reply = call_symlink(std::move(list));
    results_of(method::kSymlink, reply, [&](const std::string& p) {
      record(p, c_.local.at(p));
      std::lock_guard lock(prog_.mu);
      ++c_.summary.files_sent;
    });
  });
}

void PushPipeline::queue_metadata(const std::vector<Transfer>& entries) {
  if (entries.empty()) return;
  jobs_.push_back([this, &entries] {
    std::vector<wire::SetAttrsEntry> list;
    list.reserve(entries.size());
    for (const auto& t : entries)
      list.push_back({t.path, t.local.mode, t.local.kind == EntryKind::file ? std::optional(t.local.mtime_ns) : std::nullopt});
    auto reply = call_set_attrs(std::move(list));
    results_of(method::kSetAttrs, reply, [&](const std::string& p) {
      record(p, c_.local.at(p));
      std::lock_guard lock(prog_.mu);
      ++c_.summary.metadata_only;
    });
  });
}

void PushPipeline::run() {
  run_parallel(jobs_, c_.options.in_flight, c_.options.cancelled);
  spdlog::debug("sync: transfers done");
  if (!prog_.no_space) return;
  // One line that says what to do, ahead of the per-file "No space left on device" lines.
  const json& space = *prog_.no_space;
  c_.summary.no_space = SyncSummary::NoSpace{space.value("path", c_.remote_root), space.value("availableBytes", std::uint64_t{0}),
                                             space.value("totalBytes", std::uint64_t{0}), prog_.total, prog_.no_space_paths};
  c_.summary.errors.insert(c_.summary.errors.begin(), no_space_advice(c_.client.endpoint().description(), space, prog_.total));
}

// --- Whole files in batches ----------------------------------------------------------------

void PushPipeline::send_batch(const std::vector<const Transfer*>& batch) {
  std::vector<wire::WriteFile> files;
  std::vector<const Transfer*> sent;
  std::vector<FileMeta> metas;  // as sent: with the hash taken while reading, if the scan had none
  std::vector<std::vector<std::uint8_t>> kept;
  std::uint64_t raw = 0, wire = 0;
  for (const Transfer* t : batch) {
    FileMeta meta = t->local;
    std::vector<std::uint8_t> read;
    if (!meta.hash) {
      auto hashed = read_hashing(c_.root, t->path, meta, c_.index, c_.options.local_modes);
      if (!hashed) {
        prog_.read_failed(t->path, hashed.error());
        continue;
      }
      if (!*hashed) {
        unstable(t->path);  // changed since the scan or while read
        continue;
      }
      read = std::move(**hashed);
      std::lock_guard lock(prog_.mu);
      late_hashes_.emplace_back(t->path, *meta.hash);
    } else {
      auto bytes = read_bytes(c_.root / t->path);
      if (!bytes) {
        prog_.read_failed(t->path, bytes.error());
        continue;
      }
      if (delta::hash128(*bytes) != *meta.hash) {
        unstable(t->path);  // changed since the scan: the next sync sends it
        continue;
      }
      read = std::move(*bytes);
    }
    auto packed = protocol::compress_payload(read.data(), read.size());
    if (packed.size() > kMaxRequestPayload) {
      prog_.error(fmt::format("'{}' ({}) compresses to more than one request may carry (lower stream_above)", t->path,
                              human_bytes(t->local.size)));
      continue;
    }
    raw += read.size();
    wire += packed.size();
    files.push_back({t->path, attrs_of(meta), expect_of(c_.remote, t->path), std::move(packed), std::nullopt});
    sent.push_back(t);
    metas.push_back(std::move(meta));
    kept.push_back(t->local.size >= c_.delta_min_size ? std::move(read) : std::vector<std::uint8_t>{});
  }
  if (sent.empty()) return;
  spdlog::debug("sync: batch of {} read", sent.size());
  auto reply = call_write_batch(std::move(files));
  spdlog::debug("sync: batch of {} answered", sent.size());
  add_wire(wire);
  results_of(method::kWriteBatch, reply, [&](const std::string& p) {
    for (std::size_t i = 0; i < sent.size(); ++i) {
      if (sent[i]->path != p) continue;
      record(p, metas[i]);
      keep_copy(metas[i], kept[i]);
      std::lock_guard lock(prog_.mu);
      ++c_.summary.files_sent;
      c_.summary.bytes_literal += sent[i]->local.size;
    }
  });
  prog_.advance(raw);
}

// --- Big files streamed ----------------------------------------------------------------------

// One streamed file's shared state: its workers each take the next chunk.
struct PushPipeline::Stream {
  const Transfer& t;
  int fd;
  std::int64_t handle;
  std::string temp;  // the agent's temp file, where lanes write their chunks in place
  std::atomic<std::uint64_t> next{0}, sent{0}, wire{0};
  std::atomic<bool> failed{false};
};

// A file too large for one request: begin, 8 MiB compressed chunks at their offsets with
// kStreamInFlight in flight (kStreamersPerLane per bulk lane on a long link), commit (the agent
// checks every byte arrived once, and the hash).
// Each worker reads, compresses and sends its own chunk, so reading, compressing (on every
// core) and the link overlap instead of taking turns.
void PushPipeline::stream_file(const Transfer& t) {
  const posix::UniqueFd file(posix::open_file(c_.root / t.path, O_RDONLY));
  if (!file) {
    const int e = errno;
    return prog_.read_failed(t.path, e == ENOENT ? "missing" : std::strerror(e));
  }
  auto begun = call_file_begin(t);
  if (!begun) {
    prog_.note_no_space(begun.error());
    return prog_.error(agent_error(method::kFileBegin, t.path, begun.error().message));
  }
  spdlog::debug("sync: stream {} begun", t.path);
  // On a long link the endpoint has bulk lanes: each carries kStreamersPerLane workers, which send
  // their chunks there as sync/filePart (written in place into the temp file by that lane's agent),
  // then tell the main agent where they landed. No worker sends data over the main agent then: its
  // one window would hold each placed append behind megabytes of chunks (1 GiB at 50 ms took 9.5 s
  // with four such workers beside the lanes, 7 s without). A lane that is not up (or no longer)
  // costs nothing but its chunks going over the main agent instead.
  // No .ferry/sent copy of a streamed file: most big whole sends (datasets, checkpoints, first
  // pushes) are never edited, and copying 256 MiB cost ~3% of an initial sync. The first delta
  // of such a file fetches a signature; that send keeps the copy (keep_copy).
  Stream s{t, file.get(), begun->handle, begun->temp};
  const bool use_lanes = !s.temp.empty() && c_.client.lanes_pay_for(t.local.size, c_.options.cpu_lanes_above);
  const std::size_t lanes = use_lanes ? c_.client.bulk_lanes() : 0;
  {
    std::vector<std::jthread> pool;
    const std::uint64_t chunks = (t.local.size + kReadChunk - 1) / kReadChunk;
    const unsigned per_lane = lanes && c_.client.lanes_save_cpu() ? kStreamersPerCpuLane : kStreamersPerLane;
    const std::uint64_t workers = std::min<std::uint64_t>(lanes ? lanes * per_lane : kStreamInFlight, chunks);
    // Worker i on lane i mod lanes: a file of a few chunks still spreads them over several windows.
    auto lane_of = [&](std::uint64_t i) { return lanes ? std::optional<std::size_t>(i % lanes) : std::nullopt; };
    for (std::uint64_t i = 1; i < workers; ++i) pool.emplace_back([this, &s, lane = lane_of(i)] { stream_chunks(s, lane); });
    stream_chunks(s, lane_of(0));
  }
  add_wire(s.wire);
  commit_stream(t, s.handle, s.sent);
}

// One chunk of a stream read and packed, or nullopt when the file gave fewer bytes. A chunk that
// does not compress goes as it is (no zstd pass here nor on the box): the read buffer itself is
// moved into the request (copying 8 MiB per chunk was a tenth of the helper's push). At most one
// chunk per core is read and packed at once, in buffers the stream's workers share: the workers
// waiting on the link hold only their packed bytes (a read and a bound-sized zstd buffer per
// worker faulted in 16 x 16 MiB of fresh pages for a 256 MiB file: a tenth off the 50 ms tree).
std::optional<std::vector<std::uint8_t>> PushPipeline::pack_chunk(Stream& s, std::uint64_t offset, std::size_t want, bool& stored) {
  packers_.acquire();
  struct Release {
    std::counting_semaphore<kMaxPackers>& packers;
    ~Release() { packers.release(); }
  } release{packers_};
  auto read = chunk_buffers_.take();
  auto& buf = read.get();
  buf.resize(want);
  if (posix::pread_full(s.fd, buf.data(), want, offset) != static_cast<ssize_t>(want)) return std::nullopt;
  const int level = stream_level(buf.data(), want);
  stored = level == kIncompressibleLevel;
  if (stored) return std::move(buf);
  auto packing = chunk_buffers_.take();
  return protocol::compress_payload(buf.data(), want, level, packing.get());
}

// One worker of a stream: reads, compresses and sends chunks until none is left (or one failed).
void PushPipeline::stream_chunks(Stream& s, std::optional<std::size_t> lane) {
  const Transfer& t = s.t;
  while (!s.failed && !cancelled()) {
    const std::uint64_t offset = s.next.fetch_add(kReadChunk);
    if (offset >= t.local.size) return;
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(kReadChunk, t.local.size - offset));
    bool stored = false;
    auto packed = pack_chunk(s, offset, want, stored);
    if (!packed) {
      s.failed = true;  // shrank while being sent: counted as unstable by commit_stream
      return;
    }
    s.wire += packed->size();
    bool placed = false;
    if (lane) {
      // Sent on the lane, or over the main agent when the lane is not up (packed again then).
      auto part = call_file_part(*lane, t.path, s.temp, offset, want, std::move(*packed), stored);
      if (!part) spdlog::debug("sync: {} chunk at {}: lane {}: {}; over the main agent", t.path, offset, *lane, part.error().message);
      placed = part.has_value();
      if (!placed && !(packed = pack_chunk(s, offset, want, stored))) {
        s.failed = true;
        return;
      }
    }
    wire::FileAppendParams append{where(), s.handle, offset, want, false, std::nullopt, stored};
    if (placed) append.placed = true;
    else append.data = std::move(*packed);
    auto appended = call_file_append(std::move(append));
    if (!appended) {
      if (!s.failed.exchange(true)) {
        prog_.note_no_space(appended.error());
        prog_.error(agent_error(method::kFileAppend, t.path, appended.error().message));
      }
      return;
    }
    s.sent += want;
    prog_.advance(want);
  }
}

// All chunks sent: commit (the agent checks the hash). Otherwise aborted: a file that shrank
// while being sent is unstable, a failed append is already reported.
void PushPipeline::commit_stream(const Transfer& t, std::int64_t handle, std::uint64_t sent) {
  if (sent != t.local.size) {
    (void)call_file_abort(handle);
    std::lock_guard lock(prog_.mu);
    const bool reported = std::any_of(c_.summary.errors.begin(), c_.summary.errors.end(),
                                      [&](const std::string& e) { return e.starts_with(std::string(method::kFileAppend) + " '" + t.path + "'"); });
    if (!cancelled() && !reported) c_.summary.unstable.push_back(t.path);  // shrank while being sent
    return;
  }
  spdlog::debug("sync: stream {} all chunks sent", t.path);
  auto committed = call_file_commit(handle);
  spdlog::debug("sync: stream {} committed", t.path);
  if (!committed) {
    const std::string code = committed.error().data ? committed.error().data->value("code", "") : "";
    prog_.note_no_space(committed.error());
    std::lock_guard lock(prog_.mu);
    if (code == "conflict") c_.summary.conflicts.push_back({t.path, ConflictKind::changed_remotely, committed.error().message});
    else if (code == "hash_mismatch") c_.summary.unstable.push_back(t.path);  // changed while being read
    else c_.summary.errors.push_back(agent_error(method::kFileCommit, t.path, committed.error().message));
    return;
  }
  record(t.path, t.local);
  std::lock_guard lock(prog_.mu);
  ++c_.summary.files_sent;
  c_.summary.bytes_literal += t.local.size;
}

// --- Deltas ----------------------------------------------------------------------------------

namespace {

// The file is still at the size and mtime the scan hashed it at.
bool still_as_scanned(const fs::path& file, const FileMeta& scanned) {
  const posix::UniqueFd fd(posix::open_file(file, O_RDONLY));
  posix::FileStat st;
  return fd && posix::stat_fd(fd.get(), st) == 0 && st.size == scanned.size && st.mtime_ns == scanned.mtime_ns;
}

}  // namespace

void PushPipeline::send_delta(const Transfer& t) {
  // plan_manifest: a snapshot nobody writes while jobs run (the manifest itself is being recorded into).
  // The size kept (an edit in place): the agent copies its file meanwhile, and the delta's
  // unmoved ranges are then there already. Asked from another thread: no round trip waited for.
  std::future<void> prepared;
  if (t.remote_base && t.remote_base->size == t.local.size && t.local.size >= c_.options.prepare_above)
    prepared = std::async(std::launch::async, [this, &t] {
      auto r = c_.client.prepare_delta(wire::PrepareDeltaParams{where(), t.path, expect_of(c_.remote, t.path)});
      spdlog::debug("sync: delta {}: agent copy ahead {}", t.path, r ? (r->started ? "started" : "not started") : r.error().message);
    });
  // A copy whose delta is not sent after all (a failure, a file caught mid-change) is dropped
  // now, not when its lifetime on the agent ends.
  bool applying = false;
  struct DropUnapplied {
    PushPipeline& p;
    const Transfer& t;
    std::future<void>& prepared;
    const bool& applying;
    ~DropUnapplied() {
      if (!prepared.valid() || applying) return;
      prepared.wait();
      (void)p.c_.client.prepare_delta(wire::PrepareDeltaParams{p.where(), t.path, std::nullopt, true});
    }
  } const drop_unapplied{*this, t, prepared, applying};
  auto m = c_.plan_manifest.entries.find(t.path);
  const bool own_base = m != c_.plan_manifest.entries.end() && m->second.hash && remote_matches_manifest(*t.remote_base, m->second) &&
                        fs::exists(cache_dir_ / to_hex(*m->second.hash));
  // Without a copy of its own the helper needs the agent's coarse signature: asked for now,
  // so the agent reads its copy while the helper reads this one (a 1 GiB file: ~0.4 s each).
  std::future<Signature> coarse_ahead;
  if (!own_base && t.remote_base && t.remote_base->size >= kTwoLevelAbove)
    coarse_ahead = std::async(std::launch::async, [this, &t] { return call_coarse_signature(t.path); });
  // Mapped, not read into a buffer, and not hashed again: the scan hashed these bytes, and a file
  // still at the size and mtime the scan saw (before and after the delta is made) is taken to
  // hold them, as the hash index takes it between syncs. Should it not, the agent's whole-file
  // check refuses the result (hash_mismatch, below: unstable, the next sync sends it).
  auto mapped = posix::MappedFile::open(c_.root / t.path);
  if (!mapped) return prog_.read_failed(t.path, mapped.error());
  if (!t.local.hash || mapped->size() != t.local.size || mapped->mtime_ns() != t.local.mtime_ns) return unstable(t.path);
  const std::span<const std::uint8_t> bytes = mapped->bytes();
  spdlog::debug("sync: delta {}: mapped", t.path);
  std::vector<std::uint8_t> d;
  std::uint64_t wire = 0;
  auto stats = make_delta(t, bytes, own_base, coarse_ahead, d, wire);
  if (!stats) return prog_.error(stats.error());
  if (mapped->truncated() || !still_as_scanned(c_.root / t.path, t.local)) return unstable(t.path);
  spdlog::debug("sync: delta {}: delta ready", t.path);
  auto packed = protocol::compress_payload(d.data(), d.size());
  wire += packed.size();
  // While the agent applies the delta, the next sent copy is built from the previous one and the
  // same delta (unchanged ranges copied in the kernel), not written whole afterwards.
  std::future<std::expected<PendingSentCopy, std::string>> next_copy;
  if (own_base && t.local.size >= c_.delta_min_size && t.local.size <= c_.options.cache_max_bytes / 4)
    next_copy = std::async(std::launch::async, [&] {
      return PendingSentCopy::build(cache_dir_ / to_hex(*m->second.hash), cache_dir_ / to_hex(*t.local.hash), d, *t.local.hash,
                                    t.local.size);
    });
  if (prepared.valid()) prepared.wait();  // the agent then has the copy before the delta
  applying = true;
  auto reply = call_apply_delta(t, std::move(packed), d.size());
  spdlog::debug("sync: delta {}: applied", t.path);
  add_wire(wire);
  if (!reply) {
    const std::string code = reply.error().data ? reply.error().data->value("code", "") : "";
    if (code == "conflict") {
      std::lock_guard lock(prog_.mu);
      c_.summary.conflicts.push_back({t.path, ConflictKind::changed_remotely, reply.error().message});
    } else if (code == "hash_mismatch") {
      unstable(t.path);  // the bytes were not the ones the scan hashed: changed while being read
    } else {
      prog_.note_no_space(reply.error());
      prog_.error(agent_error(method::kApplyDelta, t.path, reply.error().message));
    }
    return;
  }
  record(t.path, t.local);
  if (!mapped->truncated()) {
    auto built = next_copy.valid() ? next_copy.get() : std::unexpected(std::string("no previous copy"));
    const bool kept = built && built->commit();
    if (!kept) keep_copy(t.local, bytes);
  }
  {
    std::lock_guard lock(prog_.mu);
    ++c_.summary.files_sent;
    c_.summary.bytes_literal += stats->literal_bytes;
    c_.summary.bytes_matched += stats->copied_bytes;
  }
  prog_.advance(t.local.size);
}

// The delta of `bytes` into `d`: against the helper's own copy of what it last sent, when the
// remote still holds exactly that; else two levels of the agent's signatures for a big file;
// else its plain signature. Signature bytes are counted into `wire`. The error is the message
// for the summary.
std::expected<delta::DeltaStats, std::string> PushPipeline::make_delta(const Transfer& t, std::span<const std::uint8_t> bytes,
                                                                       bool own_base, std::future<Signature>& coarse_ahead,
                                                                       std::vector<std::uint8_t>& d, std::uint64_t& wire) {
  std::expected<delta::DeltaStats, delta::DeltaError> stats = std::unexpected(delta::DeltaError{});
  if (own_base) {
    const Hash128 h = *c_.plan_manifest.entries.at(t.path).hash;
    auto base_bytes = read_bytes(cache_dir_ / to_hex(h));
    if (base_bytes && delta::hash128(*base_bytes) == h)
      stats = delta::generate_delta_from_base(*base_bytes, bytes, delta::choose_block_size(base_bytes->size()), d, t.local.hash);
  }
  if (!stats && t.remote_base && t.remote_base->size >= kTwoLevelAbove)
    two_level_delta(t, bytes, coarse_ahead.valid() ? coarse_ahead.get() : call_coarse_signature(t.path), d, stats, wire);
  if (stats) return *stats;
  auto sig = call_signature(t.path);
  if (!sig) return std::unexpected(agent_error(method::kSignature, t.path, sig.error().message));
  if (!sig->signature) return std::unexpected(agent_error(method::kSignature, t.path, "no signature in the reply"));
  const auto& sig_bytes = *sig->signature;
  wire += sig_bytes.size();
  auto view = delta::SignatureView::parse(sig_bytes);
  if (!view) return std::unexpected(fmt::format("signature of '{}' rejected: {}", t.path, view.error().message));
  d.clear();
  stats = delta::generate_delta(*view, bytes, d, t.local.hash);
  if (!stats) return std::unexpected(fmt::format("delta for '{}': {}", t.path, stats.error().message));
  return *stats;
}

// Two levels: 1 MiB blocks first, then 1 KiB blocks over only the base ranges no coarse block
// matched (a 1-byte edit in 1 GiB: ~25 KiB instead of ~400 KiB). Leaves `stats` an error when
// neither level gave a delta.
void PushPipeline::two_level_delta(const Transfer& t, std::span<const std::uint8_t> bytes, Signature coarse_sig,
                                   std::vector<std::uint8_t>& d, std::expected<delta::DeltaStats, delta::DeltaError>& stats,
                                   std::uint64_t& wire) {
  spdlog::debug("sync: delta {}: coarse signature", t.path);
  if (!coarse_sig || !coarse_sig->signature) return;
  const auto& cs = *coarse_sig->signature;
  wire += cs.size();
  auto view = delta::SignatureView::parse(cs);
  std::vector<std::uint8_t> coarse;
  std::expected<delta::DeltaStats, delta::DeltaError> cstats = std::unexpected(delta::DeltaError{});
  // The coarse pass over every byte reads the file forward, not through the mapping (on some VMs
  // a fresh mapping's first pass costs ~0.4 s per GiB more than the reads); the refinement below
  // touches only the literal ranges through it.
  const posix::UniqueFd fd(posix::open_file_nofollow(c_.root / t.path, O_RDONLY));
  const delta::ReadAt read_at = [&fd](std::uint64_t at, std::uint8_t* buf, std::size_t n) { return posix::pread_full(fd.get(), buf, n, at); };
  if (view && fd.get() >= 0) {
    auto streamed = delta::generate_delta_streamed(*view, read_at, bytes.size(), coarse, t.local.hash);
    if (streamed) cstats = streamed->stats;
    else cstats = std::unexpected(streamed.error());
  } else if (view) {
    cstats = delta::generate_delta(*view, bytes, coarse, t.local.hash);
  }
  spdlog::debug("sync: delta {}: coarse delta", t.path);
  auto ranges = cstats ? delta::unreferenced_base_ranges(coarse) : std::unexpected(delta::DeltaError{});
  if (!ranges) return;
  std::uint64_t unmatched = 0;
  for (const auto& r : *ranges) unmatched += r.length;
  if (ranges->empty() || unmatched > t.remote_base->size / 4 || ranges->size() > kMaxFineRanges) {
    // Nothing left to refine, or so little matched that a finer signature would cost more than
    // it saves: the coarse delta (mostly compressed literal) goes as it is.
    d = std::move(coarse);
    stats = cstats;
    return;
  }
  std::vector<protocol::sync_wire::Range> rs;  // (`wire` here is the byte count)
  rs.reserve(ranges->size());
  for (const auto& r : *ranges) rs.emplace_back(r.offset, r.length);
  auto fine_sig = call_fine_signatures(t.path, std::move(rs));
  spdlog::debug("sync: delta {}: fine signatures", t.path);
  if (!fine_sig || !fine_sig->signatures) return;
  std::vector<delta::SignatureView> views;
  bool ok = true;
  for (const auto& f : *fine_sig->signatures) {
    wire += f.size();
    auto v = delta::SignatureView::parse(f);
    if (!v) ok = false;
    else views.push_back(*v);
  }
  if (!ok) return;
  d.clear();
  stats = delta::refine_delta(coarse, views, bytes, d, t.local.hash);
}

// --- 5c --------------------------------------------------------------------------------------

void PushPipeline::delete_stale(const std::vector<std::string>& deletes, const std::vector<std::string>& rmdirs) {
  if (cancelled() || (deletes.empty() && rmdirs.empty())) return;
  // Each file must still be what ferry wrote (or, listed, what the listing saw).
  std::map<std::string, wire::Expect> expect;
  for (const auto& d : deletes)
    if (auto it = c_.remote.find(d); it != c_.remote.end() && it->second.kind == EntryKind::file) expect[d] = expect_of(c_.remote, d);
  auto reply = call_delete(deletes, rmdirs, std::move(expect));
  results_of(method::kDelete, reply, [&](const std::string& p) {
    std::lock_guard lock(prog_.mu);
    c_.manifest.forget(p);
    if (!c_.local.contains(p) && std::find(deletes.begin(), deletes.end(), p) != deletes.end()) ++c_.summary.files_deleted;
  });
}

}  // namespace ferry::sync
