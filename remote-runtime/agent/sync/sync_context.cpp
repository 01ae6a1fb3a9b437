// Shared state and request targets of the agent's sync/* methods: see sync_context.hpp.
#include "remote-runtime/agent/sync/sync_context.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdlib>

#include "protocol/python_sources.hpp"
#include "remote-runtime/agent/sync/sync_generation.hpp"
#include "remote-runtime/agent/box_lookup.hpp"

namespace ferry::agent::sync {
namespace {

using protocol::json;
namespace ec = protocol::error_code;

const char* errc_name(WriteErrc c) {
  switch (c) {
    case WriteErrc::invalid_path: return "invalid_path";
    case WriteErrc::not_found: return "not_found";
    case WriteErrc::io: return "io";
    case WriteErrc::hash_mismatch: return "hash_mismatch";
    case WriteErrc::bad_delta: return "bad_delta";
    case WriteErrc::conflict: return "conflict";
    case WriteErrc::wrong_kind: return "wrong_kind";
    case WriteErrc::no_space: return "no_space";
  }
  return "io";
}

// A base naming a directory of its own instead of one below the root: "/abs" or "~/...".
bool is_outside_base(const std::string& base) { return base.starts_with('/') || base.starts_with("~/"); }

// Base and path joined in wire form ("" base: the root).
std::string join(const std::string& base, const std::string& path) {
  if (base.empty() || base == ".") return path;
  return base + "/" + path;
}

std::expected<ReadOnlySource, std::string> open_read_only_source(const std::string& source) {
  if (!source.starts_with('/')) return std::unexpected("'source' must be an absolute path on the box, not '" + source + "'");
  if (source.find('\0') != std::string::npos) return std::unexpected(std::string("'source' contains a NUL byte"));
  std::error_code ec;
  const auto canon = std::filesystem::canonical(source, ec);
  // Checked before RootPath::open, which would create a missing directory.
  if (ec || !std::filesystem::is_directory(canon, ec)) return std::unexpected("'" + source + "' is not a directory on this host");
  if (canon == "/") return std::unexpected(std::string("'source' may not be the whole filesystem"));
  auto root = RootPath::open(canon);
  if (!root) return std::unexpected(root.error());
  auto w = FileWriter::open(canon);
  if (!w) return std::unexpected(w.error().message);
  return ReadOnlySource{std::move(*root), std::make_shared<FileWriter>(std::move(*w))};
}

}  // namespace

ResponseError invalid_params(std::string_view method, const std::string& why, std::optional<json> data) {
  return ResponseError{ec::kInvalidParams, std::string(method) + ": " + why, std::move(data)};
}

ResponseError source_not_allowed(std::string_view method) {
  return invalid_params(method, "'source' names a read-only pull source; only sync/list, sync/read and sync/readDelta may use it");
}

wire::PathResult ok_entry(const std::string& path) { return wire::PathResult{path, true, {}, {}, {}}; }

json space_at(const std::filesystem::path& root) {
  struct statvfs v {};
  if (::statvfs(root.c_str(), &v) != 0) return json{{"path", root.string()}};
  return json{{"path", root.string()},
              {"availableBytes", static_cast<std::uint64_t>(v.f_bavail) * v.f_frsize},
              {"totalBytes", static_cast<std::uint64_t>(v.f_blocks) * v.f_frsize},
              {"availableInodes", static_cast<std::uint64_t>(v.f_favail)}};
}

GenerationBump::GenerationBump(const Target& t) : w_(t.writer.get()) {
  if (w_) gate_ = enter_write_gate(*w_);
}

namespace {
thread_local std::optional<SyncGeneration> t_last_bump;
}  // namespace

GenerationBump::~GenerationBump() {
  if (!w_) return;
  if (auto g = bump_generation(*w_)) t_last_bump = *g;
}

std::optional<SyncGeneration> GenerationBump::take_last_on_this_thread() { return std::exchange(t_last_bump, std::nullopt); }

std::string Target::wire_path(const std::string& path) const { return source || base_root ? path : join(base, path); }

std::optional<ResponseError> Target::source_refuses(const std::string& path, std::uint64_t size) const {
  if (!source) return std::nullopt;
  if (!protocol::is_python_source_file(path))
    return invalid_params(method + " '" + path + "'", "a read-only source serves Python sources only", json{{"code", "wrong_kind"}});
  if (size > protocol::kMaxPythonSourceFileBytes)
    return invalid_params(method + " '" + path + "'", "larger than a read-only source serves", json{{"code", "wrong_kind"}});
  return std::nullopt;
}

ResponseError Target::io_error(const std::string& what, const WriteError& e) const {
  int code = e.code == WriteErrc::invalid_path ? ec::kInvalidParams : ec::kIoError;
  json data{{"code", errc_name(e.code)}};
  if (e.code == WriteErrc::no_space) data["space"] = space_at(writer->root());
  return ResponseError{code, method + " '" + what + "': " + e.message, std::move(data)};
}

wire::PathResult Target::error_entry(const std::string& path, const WriteError& e) const {
  wire::PathResult r{path, false, errc_name(e.code), e.message, {}};
  if (e.code == WriteErrc::no_space) r.space = space_at(writer->root());
  return r;
}

std::expected<Target, ResponseError> SyncContext::open(std::string_view method, const wire::Where& where) {
  Target t;
  t.method = std::string(method);
  t.root = &root_;
  if (where.source) {
    if (!wire::allows_source(method)) return std::unexpected(source_not_allowed(method));
    auto opened = open_read_only_source(*where.source);
    if (!opened) return std::unexpected(invalid_params(method, opened.error()));
    t.writer = opened->lister_root;
    t.source = std::move(*opened);
    return t;
  }
  t.base = where.base;
  if (is_outside_base(where.base)) {
    auto outside = outside_base(where.base);
    if (!outside) return std::unexpected(invalid_params(method, "base '" + where.base + "': " + outside.error()));
    t.base_root = std::move(outside->root);
    t.writer = std::move(outside->writer);
    return t;
  }
  auto writer = writer_for(where.base);
  if (!writer) return std::unexpected(invalid_params(method, "base '" + where.base + "': " + writer.error()));
  t.writer = std::move(*writer);
  // ferry.json's rule again, on where the root resolves here: a symlink to /etc, a home elsewhere
  // than /home/USER. A sync lists its root whole and --delete removes what ferry did not put there.
  const auto given = t.base.empty() || t.base == "." ? root_.given() : root_.given() / t.base;
  if (auto why = resolved_root_refusal(given, t.writer->root()))
    return std::unexpected(invalid_params(method, "refusing to sync: " + *why));
  return t;
}

std::expected<std::shared_ptr<FileWriter>, std::string> SyncContext::writer_for(const std::string& base_in) {
  std::lock_guard lock(writers_mu_);
  return writer_for_locked(base_in);
}

std::expected<std::shared_ptr<FileWriter>, std::string> SyncContext::writer_for_locked(const std::string& base_in) {
  auto base = normalize_wire_path(base_in);
  if (!base) return std::unexpected(base.error());
  if (auto it = writers_.find(*base); it != writers_.end()) {
    // A project directory removed and made again (rm -rf, a restore) gets a fresh writer;
    // writes through the old descriptor would land in the deleted directory.
    if (it->second->still_at_root()) return it->second;
    writers_.erase(it);
  }
  // The base itself is created through the root writer's O_NOFOLLOW walk, so a symlinked
  // directory cannot stand in for it.
  if (!base->empty()) {
    auto root_writer = writer_for_locked("");
    if (!root_writer) return std::unexpected(root_writer.error());
    if (auto made = (*root_writer)->make_dirs(*base); !made) return std::unexpected(made.error().message);
  }
  auto resolved = root_.resolve(*base);
  if (!resolved) return std::unexpected(resolved.error());
  auto w = FileWriter::open(resolved->absolute);
  if (!w) return std::unexpected(w.error().message);
  auto owned = std::make_shared<FileWriter>(std::move(*w));
  writers_.emplace(*base, owned);
  return owned;
}

std::expected<SyncContext::OutsideBase, std::string> SyncContext::outside_base(const std::string& base) {
  if (base.size() > 4096 || base.find('\0') != std::string::npos) return std::unexpected(std::string("not a usable path"));
  if (!normalize_wire_path(base.substr(base.find('/') + 1))) return std::unexpected(std::string("contains '..'"));
  std::string path = base;
  if (base.starts_with("~/")) {
    auto home = own_home();
    if (!home) return std::unexpected(std::string("no home directory to expand '~' in"));
    path = *home + base.substr(1);
  }
  std::lock_guard lock(writers_mu_);
  if (auto it = outside_.find(base); it != outside_.end() && it->second.writer->still_at_root()) return it->second;
  // Made (or found) with the same refusals as the agent's own --root: never /, a home itself
  // or a system directory, also when a symlink leads there.
  auto root = RootPath::open(path);
  if (!root) return std::unexpected(root.error());
  if (auto refused = resolved_root_refusal(path, root->root())) return std::unexpected(*refused);
  auto w = FileWriter::open(root->root());
  if (!w) return std::unexpected(w.error().message);
  OutsideBase opened{std::make_shared<const RootPath>(std::move(*root)), std::make_shared<FileWriter>(std::move(*w))};
  outside_[base] = opened;
  return opened;
}

std::int64_t SyncContext::add_listing(std::shared_ptr<Listing> listing) {
  std::lock_guard lock(listings_mu_);
  // A helper that went away mid-listing never sends its last page or a cancel: the oldest
  // unfinished listings (their open directories) are dropped for new ones.
  while (listings_.size() >= kMaxListings) listings_.erase(listings_.begin());
  const std::int64_t id = next_listing_++;
  listings_.emplace(id, std::move(listing));
  return id;
}

std::shared_ptr<Listing> SyncContext::find_listing(std::int64_t id, bool remove) {
  std::lock_guard lock(listings_mu_);
  auto it = listings_.find(id);
  if (it == listings_.end()) return nullptr;
  auto l = it->second;
  if (remove) listings_.erase(it);
  return l;
}

void SyncContext::drop_listing(std::int64_t id) {
  std::lock_guard lock(listings_mu_);
  listings_.erase(id);
}

std::optional<std::string> SyncContext::upload_room() const {
  std::lock_guard lock(uploads_mu_);
  if (uploads_.size() >= kMaxUploads) return "more than " + std::to_string(kMaxUploads) + " uploads open";
  return std::nullopt;
}

std::pair<std::int64_t, std::string> SyncContext::add_upload(std::shared_ptr<Upload> upload) {
  std::lock_guard lock(uploads_mu_);
  const std::int64_t handle = next_upload_++;
  std::string temp = upload->file.temp_name();
  uploads_.emplace(handle, std::move(upload));
  return {handle, std::move(temp)};
}

std::shared_ptr<Upload> SyncContext::find_upload(std::int64_t handle, bool remove) {
  std::lock_guard lock(uploads_mu_);
  auto it = uploads_.find(handle);
  if (it == uploads_.end()) return nullptr;
  auto held = it->second;
  if (remove) uploads_.erase(it);
  return held;
}

void SyncContext::drop_upload(std::int64_t handle, const std::shared_ptr<Upload>& held) {
  std::lock_guard lock(uploads_mu_);
  if (auto it = uploads_.find(handle); it != uploads_.end() && it->second == held) uploads_.erase(it);
}

}  // namespace ferry::agent::sync
