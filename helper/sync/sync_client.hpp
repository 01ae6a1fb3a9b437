// SyncClient: the agent's sync/* methods (protocol/sync_wire.hpp) over any remote::Endpoint,
// typed, as run::RunClient is for run/*. Stateless apart from a count of mutating requests, so
// any number of threads may share one client (the endpoint keeps all their calls in flight).
//
// Who calls what: the push's stages (sync_engine.cpp) call state and list; PushPipeline
// (push_pipeline.cpp) the writes, signatures, deletes and the streamed file methods, file_part on
// the bulk lanes; the pull (sync_pull.cpp) list, read and read_delta. mutations() counts every
// mutating request, which the push compares with the agent's generation at its end.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <expected>
#include <mutex>
#include <optional>

#include "helper/remote/endpoint.hpp"
#include "helper/sync/file_meta.hpp"
#include "protocol/sync_wire.hpp"

namespace ferry::sync {

namespace wire = protocol::sync_wire;
using protocol::ResponseError;

class SyncClient {
 public:
  using Timeout = std::chrono::milliseconds;
  static constexpr Timeout kDefaultTimeout = remote::kDefaultCallTimeout;

  explicit SyncClient(remote::Endpoint& endpoint) : endpoint_(endpoint) {}
  SyncClient(const SyncClient&) = delete;
  SyncClient& operator=(const SyncClient&) = delete;

  // A reply that does not decode is kInternalError naming the method and the bad field; agent
  // errors come back as the agent sent them (code, message, data {code, space}).
  std::expected<wire::StateResult, ResponseError> state(const wire::Where& where, Timeout timeout = kDefaultTimeout);
  std::expected<wire::ListResult, ResponseError> list(const wire::ListParams& params, Timeout timeout = kDefaultTimeout);
  // Frees a paged listing's walk on the agent now (a cancelled sync).
  std::expected<void, ResponseError> cancel_listing(const wire::Where& where, std::int64_t cursor,
                                                    Timeout timeout = kDefaultTimeout);
  std::expected<wire::ReadResult, ResponseError> read(const wire::ReadParams& params, Timeout timeout = kDefaultTimeout);
  // The same read on bulk lane `lane`; kAgentUnavailable while that lane is not up.
  std::expected<wire::ReadResult, ResponseError> read_on_lane(std::size_t lane, const wire::ReadParams& params,
                                                              Timeout timeout = kDefaultTimeout);
  std::expected<wire::ReadDeltaResult, ResponseError> read_delta(const wire::ReadDeltaParams& params,
                                                                 Timeout timeout = kDefaultTimeout);
  std::expected<wire::SignatureResult, ResponseError> signature(const wire::SignatureParams& params,
                                                                Timeout timeout = kDefaultTimeout);
  // Not a mutation: the agent copies the file ahead of an applyDelta that keeps its size.
  std::expected<wire::PrepareDeltaResult, ResponseError> prepare_delta(const wire::PrepareDeltaParams& params,
                                                                       Timeout timeout = kDefaultTimeout);

  // Mutating requests (each counted in mutations(), sent or not).
  std::expected<wire::PathOk, ResponseError> apply_delta(wire::ApplyDeltaParams params, Timeout timeout = kDefaultTimeout);
  std::expected<wire::PathResults, ResponseError> write_batch(wire::WriteBatchParams params,
                                                              Timeout timeout = kDefaultTimeout);
  std::expected<wire::PathOk, ResponseError> file_commit(const wire::Where& where, std::int64_t handle,
                                                         Timeout timeout = kDefaultTimeout);
  std::expected<wire::PathResults, ResponseError> mkdir(const wire::MkdirParams& params, Timeout timeout = kDefaultTimeout);
  std::expected<wire::PathResults, ResponseError> symlink(const wire::SymlinkParams& params, Timeout timeout = kDefaultTimeout);
  std::expected<wire::PathResults, ResponseError> set_attrs(const wire::SetAttrsParams& params, Timeout timeout = kDefaultTimeout);
  std::expected<wire::PathResults, ResponseError> remove(const wire::DeleteParams& params, Timeout timeout = kDefaultTimeout);

  // A streamed file: begin, parts (on bulk lanes) and appends, then commit or abort.
  std::expected<wire::FileBeginResult, ResponseError> file_begin(const wire::FileBeginParams& params,
                                                                 Timeout timeout = kDefaultTimeout);
  // On bulk lane `lane` (an extra agent); kAgentUnavailable while that lane is not up, so the
  // caller sends the chunk as a data fileAppend instead.
  std::expected<void, ResponseError> file_part(std::size_t lane, wire::FilePartParams params,
                                               Timeout timeout = kDefaultTimeout);
  std::expected<wire::FileAppendResult, ResponseError> file_append(wire::FileAppendParams params,
                                                                   Timeout timeout = kDefaultTimeout);
  std::expected<void, ResponseError> file_abort(const wire::Where& where, std::int64_t handle, Timeout timeout = kDefaultTimeout);

  // How many bulk lanes the link has or is opening (remote::Endpoint::bulk_lanes).
  std::size_t bulk_lanes() { return endpoint_.bulk_lanes(); }
  void expect_bulk() { endpoint_.expect_bulk(); }
  // Whether those lanes cost less CPU per byte than the link (remote::Endpoint::lanes_save_cpu).
  bool lanes_save_cpu() { return endpoint_.lanes_save_cpu(); }
  // Whether a streamed file of `size` bytes should use the lanes: window lanes always, lanes
  // that only save CPU from `cpu_lanes_above` bytes on (SyncOptions::cpu_lanes_above).
  bool lanes_pay_for(std::uint64_t size, std::uint64_t cpu_lanes_above) { return size >= cpu_lanes_above || !lanes_save_cpu(); }
  std::size_t live_lanes() const { return endpoint_.live_lanes(); }
  // Mutating requests sent so far: the push compares the agent's generation with its own count.
  std::uint64_t mutations() const { return mutations_.load(); }
  // The highest stamp the write replies carried since the reset (each write's reply has the
  // base's stamp right after its own bump); nullopt when none did or their epochs differed.
  void reset_write_stamp();
  std::optional<wire::StateResult> write_stamp() const;
  remote::Endpoint& endpoint() { return endpoint_; }

 private:
  template <class R, class P>
  std::expected<R, ResponseError> call(std::string_view method, P&& params, Timeout timeout,
                                       std::optional<std::size_t> lane = std::nullopt);
  remote::Endpoint& endpoint_;
  std::atomic<std::uint64_t> mutations_{0};
  void note_write_stamp(const protocol::json& reply);
  mutable std::mutex stamp_mu_;
  std::optional<wire::StateResult> write_stamp_;
  bool stamp_epochs_differ_ = false;
};

// A listing's rows as the planner's TreeState (rows of a kind this helper does not know are left
// out: a newer agent's extra kinds are never planned as files).
TreeState tree_state_of(const std::vector<wire::ListEntry>& entries);
// "Still what the listing (or the manifest) saw" for a write or delete of `path`, or "nothing
// there" when `remote` has no such path.
wire::Expect expect_of(const TreeState& remote, const std::string& path);

}  // namespace ferry::sync
