// The transfer stage of a push (docs/sync.md "For the transfer pipeline"): what the plan sends,
// queued as jobs (directories, whole files in compressed batches, big files streamed in chunks
// over the bulk lanes, deltas, symlinks, attributes) and run `in_flight` at once, then the deletes.
// Every acknowledged write is recorded into the manifest; per-file failures, conflicts and files
// caught mid-change are collected into the summary while the rest goes on.
// Internal to ferry_sync_engine.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <semaphore>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "helper/sync/sync_client.hpp"
#include "helper/sync/sync_engine_state.hpp"
#include "protocol/delta/delta.hpp"
#include "protocol/scratch_pool.hpp"

namespace ferry::sync {

class PushPipeline {
 public:
  using Results = std::expected<wire::PathResults, ResponseError>;
  using Signature = std::expected<wire::SignatureResult, ResponseError>;

  // What the jobs read and write; all of it outlives the pipeline.
  struct Context {
    SyncClient& client;              // the mapping's endpoint, typed
    std::filesystem::path root;      // the mapping's local folder
    std::string base;                // the mapping's directory under the agent's root
    std::string remote_root;         // as configured: the no-space report's default path
    const TreeState& local;          // the read of the local tree the plan used
    const TreeState& remote;         // the remote as planned against: every write's expectation
    const Manifest& plan_manifest;   // a snapshot nobody writes while jobs run (the delta bases)
    Manifest& manifest;              // recorded into as writes are acknowledged (under the lock)
    FileIndex& index;                // hashes taken while reading new files
    SyncSummary& summary;
    const SyncOptions& options;
    std::uint64_t delta_min_size;    // smaller files keep no sent copy
  };

  // `total_bytes`: what the transfers will send, for options.progress.
  PushPipeline(Context context, std::uint64_t total_bytes);

  // 5a. Files or links where a directory goes: deleted now, before anything is queued.
  void replace(const std::vector<std::string>& paths);
  // 5b. Queued jobs, all in flight together once run() starts.
  void queue_mkdirs(const std::vector<std::string>& dirs);
  // Small files in batches of kBatchFiles / kBatchBytes, files over stream_above streamed.
  void queue_whole(const std::vector<Transfer>& files);
  void queue_deltas(const std::vector<Transfer>& files);
  void queue_symlinks(const std::vector<Transfer>& links);
  void queue_metadata(const std::vector<Transfer>& entries);
  // Runs the queued jobs, options.in_flight at once (stops starting new ones when cancelled);
  // a full disk on the box then leads the summary's errors with one line of advice.
  void run();
  // 5c. Deletes last, so an interrupted sync never loses a file it was about to replace.
  void delete_stale(const std::vector<std::string>& deletes, const std::vector<std::string>& rmdirs);

  bool cancelled() const { return c_.options.cancelled && c_.options.cancelled(); }
  // Requests that changed the remote: the end of the push checks the agent's generation
  // moved by exactly this many.
  std::uint64_t mutations() const { return c_.client.mutations() - mutations_at_start_; }
  // Hashes the batches took while reading files the walk left unhashed.
  std::vector<std::pair<std::string, Hash128>> take_late_hashes() { return std::move(late_hashes_); }

 private:
  // The agent calls, one each; the ones that change the remote count as mutations.
  // (SyncClient counts those.)
  wire::Where where() const;
  static wire::FileAttrs attrs_of(const FileMeta& meta);  // meta.hash set
  Results call_delete(const std::vector<std::string>& paths);
  Results call_delete(const std::vector<std::string>& paths, const std::vector<std::string>& dirs,
                      std::map<std::string, wire::Expect> expect);
  Results call_mkdir(std::vector<wire::MkdirEntry> dirs);
  Results call_write_batch(std::vector<wire::WriteFile> files);
  Results call_symlink(std::vector<wire::SymlinkEntry> links);
  Results call_set_attrs(std::vector<wire::SetAttrsEntry> entries);
  std::expected<wire::FileBeginResult, ResponseError> call_file_begin(const Transfer& t);
  std::expected<void, ResponseError> call_file_part(std::size_t lane, const std::string& path, const std::string& temp,
                                                    std::uint64_t offset, std::size_t raw_size, std::vector<std::uint8_t> packed,
                                                    bool stored);
  std::expected<wire::FileAppendResult, ResponseError> call_file_append(wire::FileAppendParams append);
  std::expected<void, ResponseError> call_file_abort(std::int64_t handle);
  std::expected<wire::PathOk, ResponseError> call_file_commit(std::int64_t handle);
  Signature call_signature(const std::string& path);
  Signature call_coarse_signature(const std::string& path);
  Signature call_fine_signatures(const std::string& path, std::vector<wire::Range> ranges);
  std::expected<wire::PathOk, ResponseError> call_apply_delta(const Transfer& t, std::vector<std::uint8_t> packed,
                                                              std::uint64_t delta_size);

  struct Stream;
  struct DeltaResult;
  void results_of(std::string_view method, const Results& reply, const std::function<void(const std::string&)>& on_ok);
  void record(const std::string& path, const FileMeta& meta);
  void keep_copy(const FileMeta& local, std::span<const std::uint8_t> bytes);
  void add_wire(std::uint64_t bytes);
  void unstable(const std::string& path);
  void send_batch(const std::vector<const Transfer*>& batch);
  void stream_file(const Transfer& t);
  void stream_chunks(Stream& s, std::optional<std::size_t> lane);
  std::optional<std::vector<std::uint8_t>> pack_chunk(Stream& s, std::uint64_t offset, std::size_t want, bool& stored);
  void commit_stream(const Transfer& t, std::int64_t handle, std::uint64_t sent);
  void send_delta(const Transfer& t);
  std::expected<delta::DeltaStats, std::string> make_delta(const Transfer& t, std::span<const std::uint8_t> bytes, bool own_base,
                                                           std::future<Signature>& coarse_ahead, std::vector<std::uint8_t>& d,
                                                           std::uint64_t& wire);
  void two_level_delta(const Transfer& t, std::span<const std::uint8_t> bytes, Signature coarse_sig, std::vector<std::uint8_t>& d,
                       std::expected<delta::DeltaStats, delta::DeltaError>& stats, std::uint64_t& wire);

  Context c_;
  engine_parts::Progress prog_;
  std::filesystem::path cache_dir_;  // .ferry/sent: the copies of what was sent, the next deltas' bases
  std::vector<std::function<void()>> jobs_;
  std::uint64_t mutations_at_start_ = 0;  // the client's count when this push's transfer began
  std::vector<std::pair<std::string, Hash128>> late_hashes_;  // under prog_.mu
  // Streamed chunks being read and packed (one per core) and their buffers (see pack_chunk).
  static constexpr unsigned kMaxPackers = 64;
  std::counting_semaphore<kMaxPackers> packers_{static_cast<std::ptrdiff_t>(std::clamp(std::thread::hardware_concurrency(), 1u, kMaxPackers))};
  protocol::ScratchPool chunk_buffers_{2 * kMaxPackers};
};

}  // namespace ferry::sync
