// The push's transfer stage: see push_pipeline.hpp. The order of remote steps follows
// docs/sync.md ("For the transfer pipeline").
#include "helper/sync/push_pipeline.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "protocol/delta/delta.hpp"

namespace ferry::sync {
using namespace engine_parts;

PushPipeline::PushPipeline(Context context, std::uint64_t total_bytes) : c_(std::move(context)) {
  prog_.manifest = &c_.manifest;
  prog_.summary = &c_.summary;
  prog_.options = &c_.options;
  prog_.total = total_bytes;
  cache_dir_ = c_.root / ".ferry" / "sent";
}

// --- The agent calls ---------------------------------------------------------------------

PushPipeline::Reply PushPipeline::call_delete(const std::vector<std::string>& paths) {
  ++mutations_;
  return c_.endpoint.call("sync/delete", json{{"base", c_.base}, {"paths", paths}});
}

PushPipeline::Reply PushPipeline::call_delete(const std::vector<std::string>& paths, const std::vector<std::string>& dirs,
                                              json expect) {
  ++mutations_;
  return c_.endpoint.call("sync/delete", json{{"base", c_.base}, {"paths", paths}, {"dirs", dirs}, {"expect", std::move(expect)}});
}

PushPipeline::Reply PushPipeline::call_mkdir(json dirs) {
  ++mutations_;
  return c_.endpoint.call("sync/mkdir", json{{"base", c_.base}, {"dirs", std::move(dirs)}});
}

PushPipeline::Reply PushPipeline::call_write_batch(json files) {
  ++mutations_;
  return c_.endpoint.call("sync/writeBatch", json{{"base", c_.base}, {"files", std::move(files)}}, kBigCallTimeout);
}

PushPipeline::Reply PushPipeline::call_symlink(json links) {
  ++mutations_;
  return c_.endpoint.call("sync/symlink", json{{"base", c_.base}, {"links", std::move(links)}});
}

PushPipeline::Reply PushPipeline::call_set_attrs(json entries) {
  ++mutations_;
  return c_.endpoint.call("sync/setAttrs", json{{"base", c_.base}, {"entries", std::move(entries)}});
}

PushPipeline::Reply PushPipeline::call_file_begin(const Transfer& t) {
  return c_.endpoint.call("sync/fileBegin", json{{"base", c_.base},
                                                 {"path", t.path},
                                                 {"size", t.local.size},
                                                 {"hash", hash_binary(*t.local.hash)},
                                                 {"mode", t.local.mode},
                                                 {"mtimeNs", t.local.mtime_ns},
                                                 {"expect", expect_for(c_.remote, t.path)}});
}

PushPipeline::Reply PushPipeline::call_file_part(std::size_t lane, const std::string& path, const std::string& temp,
                                                 std::uint64_t offset, std::size_t raw_size,
                                                 const std::vector<std::uint8_t>& packed) {
  return c_.endpoint.call_lane(lane, "sync/filePart",
                               json{{"base", c_.base}, {"path", path}, {"temp", temp}, {"offset", offset},
                                    {"rawSize", raw_size}, {"data", as_binary(std::vector<std::uint8_t>(packed))}},
                               kBigCallTimeout);
}

PushPipeline::Reply PushPipeline::call_file_append(json append) {
  return c_.endpoint.call("sync/fileAppend", std::move(append), kBigCallTimeout);
}

PushPipeline::Reply PushPipeline::call_file_abort(const json& handle) {
  return c_.endpoint.call("sync/fileAbort", json{{"base", c_.base}, {"handle", handle}});
}

PushPipeline::Reply PushPipeline::call_file_commit(const json& handle) {
  ++mutations_;
  return c_.endpoint.call("sync/fileCommit", json{{"base", c_.base}, {"handle", handle}}, kBigCallTimeout);
}

PushPipeline::Reply PushPipeline::call_signature(const std::string& path) {
  return c_.endpoint.call("sync/signature", json{{"base", c_.base}, {"path", path}}, kBigCallTimeout);
}

PushPipeline::Reply PushPipeline::call_coarse_signature(const std::string& path) {
  return c_.endpoint.call("sync/signature", json{{"base", c_.base}, {"path", path}, {"blockSize", kCoarseBlock}, {"strongLen", 8}},
                          kBigCallTimeout);
}

PushPipeline::Reply PushPipeline::call_fine_signatures(const std::string& path, json ranges) {
  return c_.endpoint.call("sync/signature",
                          json{{"base", c_.base}, {"path", path}, {"blockSize", kFineBlock}, {"strongLen", 8}, {"ranges", std::move(ranges)}},
                          kBigCallTimeout);
}

PushPipeline::Reply PushPipeline::call_apply_delta(const Transfer& t, std::vector<std::uint8_t> packed, std::uint64_t delta_size) {
  ++mutations_;
  return c_.endpoint.call("sync/applyDelta",
                          json{{"base", c_.base},
                               {"path", t.path},
                               {"size", t.local.size},
                               {"hash", hash_binary(*t.local.hash)},
                               {"mode", t.local.mode},
                               {"mtimeNs", t.local.mtime_ns},
                               {"delta", as_binary(std::move(packed))},
                               {"deltaSize", delta_size},
                               {"expect", expect_for(c_.remote, t.path)}},
                          kBigCallTimeout);
}

// --- What every job shares ---------------------------------------------------------------

// A reply with per-path results: `on_ok` for each written path, conflicts and failures into
// the summary; a failed request is one error.
void PushPipeline::results_of(const char* method, const Reply& reply, const std::function<void(const std::string&)>& on_ok) {
  if (!reply) {
    prog_.note_no_space(reply.error());
    prog_.error(fmt::format("{}: {}", method, reply.error().message));
    return;
  }
  for (const auto& r : reply->value("results", json::array())) {
    const std::string path = r.value("path", "");
    if (r.value("ok", false)) {
      on_ok(path);
    } else if (r.value("code", "") == "conflict") {
      std::lock_guard lock(prog_.mu);
      c_.summary.conflicts.push_back({path, ConflictKind::changed_remotely, r.value("message", "changed on the remote during the sync")});
    } else {
      prog_.note_no_space(r);
      prog_.error(fmt::format("{} '{}': {}", method, path, r.value("message", "failed")));
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
  std::error_code ec;
  fs::create_directories(cache_dir_, ec);
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
  results_of("sync/delete", reply, [&](const std::string& p) {
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
    json list = json::array();
    for (const auto& d : dirs) list.push_back({{"path", d}, {"mode", c_.local.at(d).mode}});
    auto reply = call_mkdir(std::move(list));
    results_of("sync/mkdir", reply, [&](const std::string& p) {
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
  if (std::any_of(files.begin(), files.end(), [&](const Transfer& t) { return t.local.size > stream_above; }))
    (void)c_.endpoint.bulk_lanes();
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
    json list = json::array();
    for (const auto& t : links) list.push_back({{"path", t.path}, {"target", t.local.link_target}});
    auto reply = call_symlink(std::move(list));
    results_of("sync/symlink", reply, [&](const std::string& p) {
      record(p, c_.local.at(p));
      std::lock_guard lock(prog_.mu);
      ++c_.summary.files_sent;
    });
  });
}

void PushPipeline::queue_metadata(const std::vector<Transfer>& entries) {
  if (entries.empty()) return;
  jobs_.push_back([this, &entries] {
    json list = json::array();
    for (const auto& t : entries)
      list.push_back({{"path", t.path},
                      {"mode", t.local.mode},
                      {"mtimeNs", t.local.kind == EntryKind::file ? json(t.local.mtime_ns) : json(nullptr)}});
    auto reply = call_set_attrs(std::move(list));
    results_of("sync/setAttrs", reply, [&](const std::string& p) {
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
  c_.summary.errors.insert(c_.summary.errors.begin(), no_space_advice(c_.endpoint.description(), space, prog_.total));
}

// --- Whole files in batches ----------------------------------------------------------------

void PushPipeline::send_batch(const std::vector<const Transfer*>& batch) {
  json files = json::array();
  std::vector<const Transfer*> sent;
  std::vector<FileMeta> metas;  // as sent: with the hash taken while reading, if the scan had none
  std::vector<std::vector<std::uint8_t>> kept;
  std::uint64_t raw = 0, wire = 0;
  for (const Transfer* t : batch) {
    FileMeta meta = t->local;
    std::vector<std::uint8_t> read;
    if (!meta.hash) {
      auto hashed = read_hashing(c_.root, t->path, meta, c_.index);
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
    auto packed = zstd_compress(read.data(), read.size());
    if (packed.size() > kMaxRequestPayload) {
      prog_.error(fmt::format("'{}' ({}) compresses to more than one request may carry (lower stream_above)", t->path,
                              human_bytes(t->local.size)));
      continue;
    }
    raw += read.size();
    wire += packed.size();
    files.push_back({{"path", t->path},
                     {"size", meta.size},
                     {"hash", hash_binary(*meta.hash)},
                     {"mode", meta.mode},
                     {"mtimeNs", meta.mtime_ns},
                     {"data", as_binary(std::move(packed))},
                     {"expect", expect_for(c_.remote, t->path)}});
    sent.push_back(t);
    metas.push_back(std::move(meta));
    kept.push_back(t->local.size >= c_.delta_min_size ? std::move(read) : std::vector<std::uint8_t>{});
  }
  if (sent.empty()) return;
  spdlog::debug("sync: batch of {} read", sent.size());
  auto reply = call_write_batch(std::move(files));
  spdlog::debug("sync: batch of {} answered", sent.size());
  add_wire(wire);
  results_of("sync/writeBatch", reply, [&](const std::string& p) {
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
  json handle;
  std::string temp;  // the agent's temp file, where lanes write their chunks in place
  std::atomic<std::uint64_t> next{0}, sent{0}, wire{0};
  std::atomic<bool> failed{false};
};

// A file too large for one request: begin, 8 MiB compressed chunks at their offsets with
// kStreamInFlight in flight, commit (the agent checks every byte arrived once, and the hash).
// Each worker reads, compresses and sends its own chunk, so reading, compressing (on every
// core) and the link overlap instead of taking turns.
void PushPipeline::stream_file(const Transfer& t) {
  const int fd = ::open((c_.root / t.path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return prog_.read_failed(t.path, e == ENOENT ? "missing" : std::strerror(e));
  }
  const AtExit close_fd{[fd] { ::close(fd); }};
  auto begun = call_file_begin(t);
  if (!begun) {
    prog_.note_no_space(begun.error());
    return prog_.error(agent_error("sync/fileBegin", t.path, begun.error().message));
  }
  spdlog::debug("sync: stream {} begun", t.path);
  // On a long link the endpoint has bulk lanes: the first workers each own one and send their
  // chunks there as sync/filePart (written in place into the temp file by that lane's agent),
  // then tell the main agent where they landed; a lane that is not up (yet, or any more) costs
  // nothing but its chunk going over the main agent instead.
  // No .ferry/sent copy of a streamed file: most big whole sends (datasets, checkpoints, first
  // pushes) are never edited, and copying 256 MiB cost ~3% of an initial sync. The first delta
  // of such a file fetches a signature; that send keeps the copy (keep_copy).
  Stream s{t, fd, begun->at("handle"), begun->value("temp", std::string())};
  const std::size_t lanes = s.temp.empty() ? 0 : c_.endpoint.bulk_lanes();
  {
    std::vector<std::jthread> pool;
    const auto chunks = (t.local.size + kReadChunk - 1) / kReadChunk;
    // Lanes first: a file of a few chunks spreads them over several windows too.
    auto lane_of = [&](std::uint64_t i) { return i < lanes ? std::optional<std::size_t>(i) : std::nullopt; };
    for (std::uint64_t i = 1; i < std::min<std::uint64_t>(kStreamInFlight + lanes, chunks); ++i)
      pool.emplace_back([this, &s, lane = lane_of(i)] { stream_chunks(s, lane); });
    stream_chunks(s, lane_of(0));
  }
  add_wire(s.wire);
  commit_stream(t, s.handle, s.sent);
}

// One worker of a stream: reads, compresses and sends chunks until none is left (or one failed).
void PushPipeline::stream_chunks(Stream& s, std::optional<std::size_t> lane) {
  const Transfer& t = s.t;
  std::vector<std::uint8_t> buf(kReadChunk);
  while (!s.failed && !cancelled()) {
    const std::uint64_t offset = s.next.fetch_add(kReadChunk);
    if (offset >= t.local.size) return;
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(kReadChunk, t.local.size - offset));
    std::size_t got = 0;
    while (got < want) {
      const ssize_t k = ::pread(s.fd, buf.data() + got, want - got, static_cast<off_t>(offset + got));
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) break;
      got += static_cast<std::size_t>(k);
    }
    if (got != want) {
      s.failed = true;  // shrank while being sent: counted as unstable by commit_stream
      return;
    }
    auto packed = zstd_compress(buf.data(), got, stream_level(buf.data(), got));
    s.wire += packed.size();
    json append{{"base", c_.base}, {"handle", s.handle}, {"offset", offset}, {"rawSize", got}};
    bool placed = false;
    if (lane) {
      // Sent on the lane, or over the main agent when the lane is not up.
      auto part = call_file_part(*lane, t.path, s.temp, offset, got, packed);
      if (!part) spdlog::debug("sync: {} chunk at {}: lane {}: {}; over the main agent", t.path, offset, *lane, part.error().message);
      placed = part.has_value();
    }
    if (placed) append["placed"] = true;
    else append["data"] = as_binary(std::move(packed));
    auto appended = call_file_append(std::move(append));
    if (!appended) {
      if (!s.failed.exchange(true)) {
        prog_.note_no_space(appended.error());
        prog_.error(agent_error("sync/fileAppend", t.path, appended.error().message));
      }
      return;
    }
    s.sent += got;
    prog_.advance(got);
  }
}

// All chunks sent: commit (the agent checks the hash). Otherwise aborted: a file that shrank
// while being sent is unstable, a failed append is already reported.
void PushPipeline::commit_stream(const Transfer& t, const json& handle, std::uint64_t sent) {
  if (sent != t.local.size) {
    (void)call_file_abort(handle);
    std::lock_guard lock(prog_.mu);
    const bool reported = std::any_of(c_.summary.errors.begin(), c_.summary.errors.end(),
                                      [&](const std::string& e) { return e.starts_with("sync/fileAppend '" + t.path + "'"); });
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
    else c_.summary.errors.push_back(agent_error("sync/fileCommit", t.path, committed.error().message));
    return;
  }
  record(t.path, t.local);
  std::lock_guard lock(prog_.mu);
  ++c_.summary.files_sent;
  c_.summary.bytes_literal += t.local.size;
}

// --- Deltas ----------------------------------------------------------------------------------

void PushPipeline::send_delta(const Transfer& t) {
  // plan_manifest: a snapshot nobody writes while jobs run (the manifest itself is being recorded into).
  auto m = c_.plan_manifest.entries.find(t.path);
  const bool own_base = m != c_.plan_manifest.entries.end() && m->second.hash && remote_matches_manifest(*t.remote_base, m->second) &&
                        fs::exists(cache_dir_ / to_hex(*m->second.hash));
  // Without a copy of its own the helper needs the agent's coarse signature: asked for now,
  // so the agent reads its copy while the helper reads this one (a 1 GiB file: ~0.4 s each).
  std::future<Reply> coarse_ahead;
  if (!own_base && t.remote_base && t.remote_base->size >= kTwoLevelAbove)
    coarse_ahead = std::async(std::launch::async, [this, &t] { return call_coarse_signature(t.path); });
  auto read = FileBytes::read(c_.root / t.path);
  if (!read) return prog_.read_failed(t.path, read.error());
  const std::span<const std::uint8_t> bytes = read->bytes();
  if (!t.local.hash || delta::hash128(bytes) != *t.local.hash) return unstable(t.path);
  spdlog::debug("sync: delta {}: read and verified", t.path);
  std::vector<std::uint8_t> d;
  std::uint64_t wire = 0;
  auto stats = make_delta(t, bytes, own_base, coarse_ahead, d, wire);
  if (!stats) return prog_.error(stats.error());
  spdlog::debug("sync: delta {}: delta ready", t.path);
  auto packed = zstd_compress(d.data(), d.size());
  wire += packed.size();
  auto reply = call_apply_delta(t, std::move(packed), d.size());
  spdlog::debug("sync: delta {}: applied", t.path);
  add_wire(wire);
  if (!reply) {
    if (reply.error().data && reply.error().data->value("code", "") == "conflict") {
      std::lock_guard lock(prog_.mu);
      c_.summary.conflicts.push_back({t.path, ConflictKind::changed_remotely, reply.error().message});
    } else {
      prog_.note_no_space(reply.error());
      prog_.error(agent_error("sync/applyDelta", t.path, reply.error().message));
    }
    return;
  }
  record(t.path, t.local);
  keep_copy(t.local, bytes);
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
                                                                       bool own_base, std::future<Reply>& coarse_ahead,
                                                                       std::vector<std::uint8_t>& d, std::uint64_t& wire) {
  std::expected<delta::DeltaStats, delta::DeltaError> stats = std::unexpected(delta::DeltaError{});
  if (own_base) {
    const Hash128 h = *c_.plan_manifest.entries.at(t.path).hash;
    auto base_bytes = read_bytes(cache_dir_ / to_hex(h));
    if (base_bytes && delta::hash128(*base_bytes) == h)
      stats = delta::generate_delta_from_base(*base_bytes, bytes, delta::choose_block_size(base_bytes->size()), d);
  }
  if (!stats && t.remote_base && t.remote_base->size >= kTwoLevelAbove)
    two_level_delta(t, bytes, coarse_ahead.valid() ? coarse_ahead.get() : call_coarse_signature(t.path), d, stats, wire);
  if (stats) return *stats;
  auto sig = call_signature(t.path);
  if (!sig) return std::unexpected(agent_error("sync/signature", t.path, sig.error().message));
  const auto& sig_bytes = sig->at("signature").get_binary();
  wire += sig_bytes.size();
  auto view = delta::SignatureView::parse(sig_bytes);
  if (!view) return std::unexpected(fmt::format("signature of '{}' rejected: {}", t.path, view.error().message));
  d.clear();
  stats = delta::generate_delta(*view, bytes, d);
  if (!stats) return std::unexpected(fmt::format("delta for '{}': {}", t.path, stats.error().message));
  return *stats;
}

// Two levels: 1 MiB blocks first, then 1 KiB blocks over only the base ranges no coarse block
// matched (a 1-byte edit in 1 GiB: ~25 KiB instead of ~400 KiB). Leaves `stats` an error when
// neither level gave a delta.
void PushPipeline::two_level_delta(const Transfer& t, std::span<const std::uint8_t> bytes, Reply coarse_sig,
                                   std::vector<std::uint8_t>& d, std::expected<delta::DeltaStats, delta::DeltaError>& stats,
                                   std::uint64_t& wire) {
  spdlog::debug("sync: delta {}: coarse signature", t.path);
  if (!coarse_sig) return;
  const auto& cs = coarse_sig->at("signature").get_binary();
  wire += cs.size();
  auto view = delta::SignatureView::parse(cs);
  std::vector<std::uint8_t> coarse;
  std::expected<delta::DeltaStats, delta::DeltaError> cstats = std::unexpected(delta::DeltaError{});
  if (view) cstats = delta::generate_delta(*view, bytes, coarse);
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
  json rs = json::array();
  for (const auto& r : *ranges) rs.push_back(json::array({r.offset, r.length}));
  auto fine_sig = call_fine_signatures(t.path, std::move(rs));
  spdlog::debug("sync: delta {}: fine signatures", t.path);
  if (!fine_sig || !fine_sig->contains("signatures")) return;
  std::vector<delta::SignatureView> views;
  bool ok = true;
  for (const auto& f : fine_sig->at("signatures")) {
    wire += f.get_binary().size();
    auto v = delta::SignatureView::parse(f.get_binary());
    if (!v) ok = false;
    else views.push_back(*v);
  }
  if (!ok) return;
  d.clear();
  stats = delta::refine_delta(coarse, views, bytes, d);
}

// --- 5c --------------------------------------------------------------------------------------

void PushPipeline::delete_stale(const std::vector<std::string>& deletes, const std::vector<std::string>& rmdirs) {
  if (cancelled() || (deletes.empty() && rmdirs.empty())) return;
  // Each file must still be what ferry wrote (or, listed, what the listing saw).
  json expect = json::object();
  for (const auto& d : deletes)
    if (auto it = c_.remote.find(d); it != c_.remote.end() && it->second.kind == EntryKind::file) expect[d] = expect_for(c_.remote, d);
  auto reply = call_delete(deletes, rmdirs, std::move(expect));
  results_of("sync/delete", reply, [&](const std::string& p) {
    std::lock_guard lock(prog_.mu);
    c_.manifest.forget(p);
    if (!c_.local.contains(p) && std::find(deletes.begin(), deletes.end(), p) != deletes.end()) ++c_.summary.files_deleted;
  });
}

}  // namespace ferry::sync
