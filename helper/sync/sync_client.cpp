// The agent's sync/* methods, typed: see sync_client.hpp.
#include "helper/sync/sync_client.hpp"

namespace ferry::sync {
namespace {

namespace method = wire::method;
namespace ec = protocol::error_code;

struct Ignored {};
std::optional<protocol::DecodeError> from_json(const protocol::json&, Ignored&, const std::string&) { return std::nullopt; }

// The typed decode copies byte strings; a reply's file bytes (a pull's 8 MiB chunks) are moved
// out of it first, leaving an empty byte string for the decode to check, and put back after.
wire::Bytes take_bytes(protocol::json& reply, const char* key) {
  auto it = reply.is_object() ? reply.find(key) : reply.end();
  if (it == reply.end() || !it->is_binary()) return {};
  wire::Bytes out = std::move(static_cast<wire::Bytes&>(it->get_binary()));
  *it = protocol::json::binary_t{};
  return out;
}

}  // namespace

template <class R, class P>
std::expected<R, ResponseError> SyncClient::call(std::string_view m, P&& params, Timeout timeout, std::optional<std::size_t> lane) {
  if (wire::is_mutating(m)) ++mutations_;
  auto reply = lane ? endpoint_.call_lane(*lane, m, to_json(std::forward<P>(params)), timeout)
                    : endpoint_.call(m, to_json(std::forward<P>(params)), timeout);
  if (!reply) return std::unexpected(std::move(reply.error()));
  if (wire::is_mutating(m)) note_write_stamp(*reply);
  wire::Bytes data;
  if constexpr (std::is_same_v<R, wire::ReadResult>) data = take_bytes(*reply, "data");
  R out{};
  if (auto bad = from_json(*reply, out, ""))
    return std::unexpected(ResponseError{ec::kInternalError, std::string(m) + ": malformed reply from the agent: " + bad->to_string(), {}});
  if constexpr (std::is_same_v<R, wire::ReadResult>) out.data = std::move(data);
  return out;
}

void SyncClient::note_write_stamp(const protocol::json& reply) {
  if (!reply.is_object() || !reply.contains("stamp")) return;
  wire::StateResult s;
  if (from_json(reply["stamp"], s, "/stamp")) return;
  std::lock_guard lock(stamp_mu_);
  if (write_stamp_ && write_stamp_->epoch != s.epoch) stamp_epochs_differ_ = true;
  if (!write_stamp_ || s.generation > write_stamp_->generation) write_stamp_ = std::move(s);
}

void SyncClient::reset_write_stamp() {
  std::lock_guard lock(stamp_mu_);
  write_stamp_.reset();
  stamp_epochs_differ_ = false;
}

std::optional<wire::StateResult> SyncClient::write_stamp() const {
  std::lock_guard lock(stamp_mu_);
  if (stamp_epochs_differ_) return std::nullopt;
  return write_stamp_;
}

std::expected<wire::StateResult, ResponseError> SyncClient::state(const wire::Where& where, Timeout timeout) {
  return call<wire::StateResult>(method::kState, wire::StateParams{where}, timeout);
}

std::expected<wire::ListResult, ResponseError> SyncClient::list(const wire::ListParams& params, Timeout timeout) {
  return call<wire::ListResult>(method::kList, params, timeout);
}

std::expected<void, ResponseError> SyncClient::cancel_listing(const wire::Where& where, std::int64_t cursor, Timeout timeout) {
  wire::ListParams p;
  p.where = where;
  p.cursor = cursor;
  p.cancel = true;
  auto r = call<Ignored>(method::kList, p, timeout);
  if (!r) return std::unexpected(std::move(r.error()));
  return {};
}

std::expected<wire::ReadResult, ResponseError> SyncClient::read(const wire::ReadParams& params, Timeout timeout) {
  return call<wire::ReadResult>(method::kRead, params, timeout);
}

std::expected<wire::ReadResult, ResponseError> SyncClient::read_on_lane(std::size_t lane, const wire::ReadParams& params,
                                                                      Timeout timeout) {
  return call<wire::ReadResult>(method::kRead, params, timeout, lane);
}

std::expected<wire::ReadDeltaResult, ResponseError> SyncClient::read_delta(const wire::ReadDeltaParams& params, Timeout timeout) {
  return call<wire::ReadDeltaResult>(method::kReadDelta, params, timeout);
}

std::expected<wire::SignatureResult, ResponseError> SyncClient::signature(const wire::SignatureParams& params, Timeout timeout) {
  return call<wire::SignatureResult>(method::kSignature, params, timeout);
}

std::expected<wire::PrepareDeltaResult, ResponseError> SyncClient::prepare_delta(const wire::PrepareDeltaParams& params,
                                                                                 Timeout timeout) {
  return call<wire::PrepareDeltaResult>(method::kPrepareDelta, params, timeout);
}

std::expected<wire::PathOk, ResponseError> SyncClient::apply_delta(wire::ApplyDeltaParams params, Timeout timeout) {
  return call<wire::PathOk>(method::kApplyDelta, std::move(params), timeout);
}

std::expected<wire::PathResults, ResponseError> SyncClient::write_batch(wire::WriteBatchParams params, Timeout timeout) {
  return call<wire::PathResults>(method::kWriteBatch, std::move(params), timeout);
}

std::expected<wire::PathOk, ResponseError> SyncClient::file_commit(const wire::Where& where, std::int64_t handle, Timeout timeout) {
  return call<wire::PathOk>(method::kFileCommit, wire::FileHandleParams{where, handle}, timeout);
}

std::expected<wire::PathResults, ResponseError> SyncClient::mkdir(const wire::MkdirParams& params, Timeout timeout) {
  return call<wire::PathResults>(method::kMkdir, params, timeout);
}

std::expected<wire::PathResults, ResponseError> SyncClient::symlink(const wire::SymlinkParams& params, Timeout timeout) {
  return call<wire::PathResults>(method::kSymlink, params, timeout);
}

std::expected<wire::PathResults, ResponseError> SyncClient::set_attrs(const wire::SetAttrsParams& params, Timeout timeout) {
  return call<wire::PathResults>(method::kSetAttrs, params, timeout);
}

std::expected<wire::PathResults, ResponseError> SyncClient::remove(const wire::DeleteParams& params, Timeout timeout) {
  return call<wire::PathResults>(method::kDelete, params, timeout);
}

std::expected<wire::FileBeginResult, ResponseError> SyncClient::file_begin(const wire::FileBeginParams& params, Timeout timeout) {
  return call<wire::FileBeginResult>(method::kFileBegin, params, timeout);
}

std::expected<void, ResponseError> SyncClient::file_part(std::size_t lane, wire::FilePartParams params, Timeout timeout) {
  auto reply = endpoint_.call_lane(lane, method::kFilePart, to_json(std::move(params)), timeout);
  if (!reply) return std::unexpected(std::move(reply.error()));
  return {};
}

std::expected<wire::FileAppendResult, ResponseError> SyncClient::file_append(wire::FileAppendParams params, Timeout timeout) {
  return call<wire::FileAppendResult>(method::kFileAppend, std::move(params), timeout);
}

std::expected<void, ResponseError> SyncClient::file_abort(const wire::Where& where, std::int64_t handle, Timeout timeout) {
  auto r = call<wire::OkResult>(method::kFileAbort, wire::FileHandleParams{where, handle}, timeout);
  if (!r) return std::unexpected(std::move(r.error()));
  return {};
}

TreeState tree_state_of(const std::vector<wire::ListEntry>& entries) {
  TreeState out;
  for (const auto& e : entries) {
    if (e.kind < 0 || e.kind > static_cast<int>(EntryKind::symlink)) continue;
    out.insert_or_assign(e.path, FileMeta{static_cast<EntryKind>(e.kind), e.mode, e.size, e.mtime_ns, e.hash, e.link_target});
  }
  return out;
}

wire::Expect expect_of(const TreeState& remote, const std::string& path) {
  auto it = remote.find(path);
  if (it == remote.end()) return wire::Expect{};
  return wire::Expect{true, it->second.size, it->second.mtime_ns};
}

}  // namespace ferry::sync
