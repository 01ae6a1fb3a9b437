// The agent's sync/* methods: see sync_methods.hpp. Params and results are documented in
// protocol/spec/protocol.md ("Agent sync methods").
#include "remote-runtime/agent/sync_methods.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <set>

#include <zstd.h>

#include "protocol/python_sources.hpp"
#include "remote-runtime/agent/sync/file_writer.hpp"
#include "remote-runtime/agent/sync/read_delta.hpp"
#include "remote-runtime/agent/sync/sync_generation.hpp"
#include "remote-runtime/agent/sync/tree_listing.hpp"

namespace ferry::agent {
namespace {

using protocol::json;
using protocol::Response;
namespace ec = protocol::error_code;
using sync::WriteErrc;
using sync::WriteError;

// A malformed request: the message names the method and the field.
struct BadParams {
  std::string message;
};

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

// The room on the filesystem holding `root`, for a write that found it full: the helper turns
// it into "N free of M; this push writes K" instead of a bare "No space left on device".
json space_at(const std::filesystem::path& root) {
  struct statvfs v {};
  if (::statvfs(root.c_str(), &v) != 0) return json{{"path", root.string()}};
  return json{{"path", root.string()},
              {"availableBytes", static_cast<std::uint64_t>(v.f_bavail) * v.f_frsize},
              {"totalBytes", static_cast<std::uint64_t>(v.f_blocks) * v.f_frsize},
              {"availableInodes", static_cast<std::uint64_t>(v.f_favail)}};
}

// A failed path in a result list; a full disk's entry carries `space` (space_at the writer's root).
json error_entry(const std::string& path, const WriteError& e, const sync::FileWriter* w = nullptr) {
  json entry{{"path", path}, {"ok", false}, {"code", errc_name(e.code)}, {"message", e.message}};
  if (e.code == WriteErrc::no_space && w) entry["space"] = space_at(w->root());
  return entry;
}
json ok_entry(const std::string& path) { return json{{"path", path}, {"ok", true}}; }

const json& field(const json& obj, const char* name) {
  if (!obj.is_object() || !obj.contains(name)) throw BadParams{std::string("missing '") + name + "'"};
  return obj[name];
}
std::string str_field(const json& obj, const char* name) {
  const json& v = field(obj, name);
  if (!v.is_string()) throw BadParams{std::string("'") + name + "' must be a string"};
  return v.get<std::string>();
}
std::int64_t int_field(const json& obj, const char* name) {
  const json& v = field(obj, name);
  if (!v.is_number_integer()) throw BadParams{std::string("'") + name + "' must be an integer"};
  return v.get<std::int64_t>();
}
std::uint64_t uint_field(const json& obj, const char* name) {
  std::int64_t v = int_field(obj, name);
  if (v < 0) throw BadParams{std::string("'") + name + "' must not be negative"};
  return static_cast<std::uint64_t>(v);
}
const json::binary_t& bin_field(const json& obj, const char* name) {
  const json& v = field(obj, name);
  if (!v.is_binary()) throw BadParams{std::string("'") + name + "' must be a byte string"};
  return v.get_binary();
}
const json& array_field(const json& obj, const char* name) {
  const json& v = field(obj, name);
  if (!v.is_array()) throw BadParams{std::string("'") + name + "' must be an array"};
  return v;
}

sync::Hash128 hash_field(const json& obj, const char* name) {
  const auto& b = bin_field(obj, name);
  if (b.size() != 16) throw BadParams{std::string("'") + name + "' must be 16 bytes (xxh3-128)"};
  sync::Hash128 h{};
  std::memcpy(h.data(), b.data(), 16);
  return h;
}

sync::FileAttrs attrs_of(const json& f) {
  sync::FileAttrs a;
  a.size = uint_field(f, "size");
  a.hash = hash_field(f, "hash");
  a.mode = static_cast<std::uint32_t>(uint_field(f, "mode")) & 07777;
  a.mtime_ns = int_field(f, "mtimeNs");
  return a;
}

std::optional<sync::Precondition> expect_of(const json& f) {
  auto it = f.find("expect");
  if (it == f.end() || it->is_null()) return std::nullopt;
  sync::Precondition p;
  const json& e = *it;
  const json& exists = field(e, "exists");
  if (!exists.is_boolean()) throw BadParams{"'expect.exists' must be a boolean"};
  p.exists = exists.get<bool>();
  if (p.exists) {
    p.size = uint_field(e, "size");
    p.mtime_ns = int_field(e, "mtimeNs");
  }
  return p;
}

// zstd frame -> bytes, refusing frames that claim (or turn out) larger than `expected`.
std::expected<std::vector<std::uint8_t>, std::string> decompress(const json::binary_t& in, std::uint64_t expected) {
  if (expected > kMaxSyncPayload) return std::unexpected("declared size " + std::to_string(expected) + " over the limit");
  unsigned long long claimed = ZSTD_getFrameContentSize(in.data(), in.size());
  if (claimed == ZSTD_CONTENTSIZE_ERROR) return std::unexpected("not a zstd frame");
  if (claimed != ZSTD_CONTENTSIZE_UNKNOWN && claimed != expected)
    return std::unexpected("zstd frame holds " + std::to_string(claimed) + " bytes, " + std::to_string(expected) + " declared");
  std::vector<std::uint8_t> out(expected);
  // One context per thread: ZSTD_decompress sets up a fresh one per call, which was most of
  // the agent's CPU for a batch of tiny files.
  thread_local std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> dctx(ZSTD_createDCtx(), &ZSTD_freeDCtx);
  std::size_t n = dctx ? ZSTD_decompressDCtx(dctx.get(), out.data(), out.size(), in.data(), in.size())
                       : ZSTD_decompress(out.data(), out.size(), in.data(), in.size());
  if (ZSTD_isError(n)) return std::unexpected(std::string("zstd: ") + ZSTD_getErrorName(n));
  if (n != expected) return std::unexpected("zstd frame decompressed to " + std::to_string(n) + " bytes, " + std::to_string(expected) + " declared");
  return out;
}

json::binary_t compress(const std::uint8_t* data, std::size_t size) {
  std::vector<std::uint8_t> out(ZSTD_compressBound(size));
  std::size_t n = ZSTD_compress(out.data(), out.size(), data, size, 3);
  out.resize(ZSTD_isError(n) ? 0 : n);
  return json::binary_t(std::move(out));
}

json::binary_t hash_bytes(const sync::Hash128& h) { return json::binary_t(std::vector<std::uint8_t>(h.begin(), h.end())); }

bool is_mutating(const std::string& method) {
  return method == "sync/writeBatch" || method == "sync/applyDelta" || method == "sync/fileCommit" ||
         method == "sync/delete" || method == "sync/mkdir" || method == "sync/symlink" || method == "sync/setAttrs";
}

// Base and path joined in wire form ("" base: the root).
std::string join(const std::string& base, const std::string& path) {
  if (base.empty() || base == ".") return path;
  return base + "/" + path;
}

// Why the agent will not sync at `root` (canonical), or nullopt: the whole filesystem, or the
// home directory of the user it runs as. ferry.json refuses such mapping roots by name; this
// catches what a config cannot tell: a home elsewhere than /home/USER, a symlink to / or ~.
std::optional<std::string> unsafe_sync_root(const std::filesystem::path& root) {
  if (root == "/") return std::string("it is the whole filesystem of this host");
  std::vector<std::string> homes;
  if (const char* h = std::getenv("HOME"); h && *h) homes.emplace_back(h);
  if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir && *pw->pw_dir) homes.emplace_back(pw->pw_dir);
  for (const auto& h : homes) {
    std::error_code ec;
    if (auto canon = std::filesystem::canonical(h, ec); !ec && canon == root) return "it is the home directory " + h + " itself";
  }
  return std::nullopt;
}

// A read-only pull source (`source` instead of `base`): an absolute directory outside the
// mapping root, e.g. the interpreter's site-packages that `ferry env sync` mirrors. Only read
// methods may name one and only Python sources are served from it (protocol/python_sources.hpp),
// so it can never widen what the agent writes, nor hand out keys or data files.
struct ReadOnlySource {
  RootPath resolver;
  std::shared_ptr<sync::FileWriter> lister_root;  // opened for TreeLister; never written through
};

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
  auto w = sync::FileWriter::open(canon);
  if (!w) return std::unexpected(w.error().message);
  return ReadOnlySource{std::move(*root), std::make_shared<sync::FileWriter>(std::move(*w))};
}

bool read_only_method(const std::string& m) { return m == "sync/list" || m == "sync/read" || m == "sync/readDelta"; }

}  // namespace

RequestLane classify_sync_request(const protocol::Request& r) {
  const std::string& m = r.method;
  if (m == "sync/writeBatch") return {RequestLane::parallel, "batch"};
  if (m == "sync/filePart") return {RequestLane::parallel, "part"};
  if (m == "sync/fileAppend" || m == "sync/fileCommit" || m == "sync/fileAbort") {
    const json* handle = r.params.is_object() && r.params.contains("handle") ? &r.params["handle"] : nullptr;
    // A request without a usable handle is refused by the method itself, on the reader thread.
    if (!handle || !handle->is_number_integer()) return {};
    std::string key = "upload:" + std::to_string(handle->get<std::int64_t>());
    return {m == "sync/fileAppend" ? RequestLane::parallel : RequestLane::inline_now, std::move(key)};
  }
  if (m == "sync/state" || m == "sync/list" || m == "sync/delete") return {RequestLane::barrier, {}};
  return {};
}

// A listing taken in pages (sync/list with pageEntries or pageMs, continued by cursor): the
// walk's state and the options its predicates read.
struct SyncMethods::Listing {
  std::set<std::string> known, prune;
  std::vector<std::string> hash_under;
  bool hash_all = false;
  bool python_only = false;  // a read-only source: regular Python source files only
  std::size_t page_entries = kMaxListPageEntries;
  std::int64_t page_ms = 1000;
  std::optional<sync::TreeLister> lister;
};

struct SyncMethods::Upload {
  std::string path;
  sync::PendingFile file;
  std::optional<sync::Precondition> expect;
  std::uint64_t size = 0, received = 0;
  std::mutex mu;  // appends running on several workers: one at a time into `file`
  Upload(std::string p, sync::PendingFile f, std::optional<sync::Precondition> e, std::uint64_t n)
      : path(std::move(p)), file(std::move(f)), expect(std::move(e)), size(n) {}
};

SyncMethods::SyncMethods(RootPath root) : root_(std::move(root)) {}
SyncMethods::~SyncMethods() = default;

std::expected<std::shared_ptr<sync::FileWriter>, std::string> SyncMethods::writer_for(const std::string& base_in) {
  std::lock_guard lock(writers_mu_);
  return writer_for_locked(base_in);
}

std::expected<std::shared_ptr<sync::FileWriter>, std::string> SyncMethods::writer_for_locked(const std::string& base_in) {
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
  auto w = sync::FileWriter::open(resolved->absolute);
  if (!w) return std::unexpected(w.error().message);
  auto owned = std::make_shared<sync::FileWriter>(std::move(*w));
  writers_.emplace(*base, owned);
  return owned;
}

std::optional<Response> SyncMethods::handle(const protocol::Request& r) {
  if (!r.method.starts_with("sync/")) return std::nullopt;
  try {
    return dispatch(r);
  } catch (const BadParams& e) {
    return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": " + e.message);
  } catch (const json::exception& e) {
    return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": " + e.what());
  }
}

Response SyncMethods::dispatch(const protocol::Request& r) {
  const json& p = r.params;
  if (!p.is_object()) return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": params must be an object");
  std::string base = p.contains("base") ? str_field(p, "base") : std::string();
  std::optional<ReadOnlySource> source;
  if (p.contains("source")) {
    if (!read_only_method(r.method))
      return protocol::make_error(r.id, ec::kInvalidParams,
                                  r.method + ": 'source' names a read-only pull source; only sync/list, sync/read and "
                                             "sync/readDelta may use it");
    auto opened = open_read_only_source(str_field(p, "source"));
    if (!opened) return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": " + opened.error());
    source = std::move(*opened);
  }
  std::shared_ptr<sync::FileWriter> keep_writer;
  if (source) {
    keep_writer = source->lister_root;
  } else {
    auto writer = writer_for(base);
    if (!writer) return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": base '" + base + "': " + writer.error());
    keep_writer = std::move(*writer);
  }
  sync::FileWriter& w = *keep_writer;
  const RootPath& resolver = source ? source->resolver : root_;
  // The wire path of a request's `path`: below `base` in the mapping, or inside the source.
  auto wire_path = [&](const std::string& path) { return source ? path : join(base, path); };
  // A read from a source: a Python source file of a sane size, else nothing.
  auto source_refuses = [&](const std::string& path, std::uint64_t size) -> std::optional<Response> {
    if (!source) return std::nullopt;
    if (!protocol::is_python_source_file(path))
      return protocol::make_error(r.id, ec::kInvalidParams, r.method + " '" + path + "': a read-only source serves Python sources only",
                                  json{{"code", "wrong_kind"}});
    if (size > protocol::kMaxPythonSourceFileBytes)
      return protocol::make_error(r.id, ec::kInvalidParams, r.method + " '" + path + "': larger than a read-only source serves",
                                  json{{"code", "wrong_kind"}});
    return std::nullopt;
  };
  if (auto why = source ? std::nullopt : unsafe_sync_root(w.root())) {
    // A sync lists its root whole and --delete removes what ferry did not put there.
    return protocol::make_error(r.id, ec::kInvalidParams,
                                r.method + ": refusing to sync into " + w.root().string() + ": " + *why +
                                    "; map the project to a directory of its own (e.g. \"~/work/NAME\" in ferry.json)");
  }
  // Every request that can change the tree bumps the base's generation once it is done (also
  // when it failed: the count only has to tell the helper whether anyone else wrote).
  struct Bump {
    sync::FileWriter* w;
    ~Bump() {
      if (w) (void)sync::bump_generation(*w);
    }
  } bump{is_mutating(r.method) ? &w : nullptr};
  auto io_error = [&](const std::string& what, const WriteError& e) {
    int code = e.code == WriteErrc::invalid_path ? ec::kInvalidParams : ec::kIoError;
    json data{{"code", errc_name(e.code)}};
    if (e.code == WriteErrc::no_space) data["space"] = space_at(w.root());
    return protocol::make_error(r.id, code, r.method + " '" + what + "': " + e.message, std::move(data));
  };

  if (r.method == "sync/state") {
    // The helper's "did anyone write since my last push?": one tiny exchange per sync.
    auto g = sync::read_generation(w);
    if (!g) return io_error(base, g.error());
    return protocol::make_result(r.id, json{{"epoch", g->epoch}, {"generation", g->generation}});
  }

  if (r.method == "sync/list") {
    // Arrays, not objects: a 100k-file listing stays small on the wire.
    const bool python_only = source.has_value();
    auto rows = [](const std::vector<sync::TreeEntry>& listed, bool python_only) {
      json entries = json::array();
      for (const auto& e : listed) {
        if (python_only && (e.kind != sync::TreeEntryKind::file || !protocol::is_python_source_file(e.path) ||
                            e.size > protocol::kMaxPythonSourceFileBytes))
          continue;
        json row = json::array({e.path, static_cast<int>(e.kind), e.mode, e.size, e.mtime_ns, e.link_target});
        row.push_back(e.hash ? json(hash_bytes(*e.hash)) : json(nullptr));
        entries.push_back(std::move(row));
      }
      return entries;
    };
    // One page of a listing; the cursor is there while more remains.
    auto page = [&](const std::shared_ptr<Listing>& l, std::int64_t id, std::size_t swept) {
      const auto budget = std::chrono::milliseconds(l->page_ms);
      json result{{"entries", rows(l->lister->next(l->page_entries, sync::TreeLister::Clock::now() + budget), l->python_only)},
                  {"swept", swept},
                  {"listed", l->lister->listed()},
                  {"otherFilesystems", l->lister->take_other_filesystems()}};
      std::lock_guard lock(listings_mu_);
      if (l->lister->done()) listings_.erase(id);
      else result["cursor"] = id;
      return protocol::make_result(r.id, std::move(result));
    };
    if (p.contains("cursor")) {
      const std::int64_t id = int_field(p, "cursor");
      std::shared_ptr<Listing> l;
      {
        std::lock_guard lock(listings_mu_);
        if (auto it = listings_.find(id); it != listings_.end()) l = it->second;
        if (l && p.value("cancel", false)) listings_.erase(id);
      }
      if (!l) {
        return protocol::make_error(r.id, ec::kInvalidParams,
                                    "sync/list: no listing " + std::to_string(id) +
                                        " (finished, cancelled, or dropped for newer ones); start a new listing");
      }
      if (p.value("cancel", false)) return protocol::make_result(r.id, json{{"entries", json::array()}, {"cancelled", true}});
      return page(l, id, 0);
    }
    std::size_t swept = 0;
    if (source && (p.contains("only") || p.value("sweep", false)))
      throw BadParams{"'only' and 'sweep' do not apply to a read-only source"};
    if (p.value("sweep", false)) {
      if (auto s = w.sweep_temp_files()) swept = *s;
    }
    // The options live in the listing, whose pages may come in later requests.
    auto listing = std::make_shared<Listing>();
    std::set<std::string>& known = listing->known;
    std::set<std::string>& prune = listing->prune;
    if (p.contains("known"))
      for (const auto& k : array_field(p, "known"))
        if (k.is_string()) known.insert(k.get<std::string>());
    if (p.contains("prune"))
      for (const auto& k : array_field(p, "prune"))
        if (k.is_string()) prune.insert(k.get<std::string>());
    listing->hash_all = p.value("hashAll", false);
    // pull: every file below these is hashed
    if (p.contains("hashUnder"))
      for (const auto& k : array_field(p, "hashUnder"))
        if (k.is_string()) listing->hash_under.push_back(k.get<std::string>());
    sync::ListOptions opt;
    listing->python_only = python_only;
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
    if (p.contains("only")) {
      // Sync on save: just these paths, so a save costs a few stats whatever the tree size.
      json entries = json::array();
      for (const auto& k : array_field(p, "only")) {
        if (!k.is_string()) throw BadParams{"'only' must hold strings"};
        const std::string path = k.get<std::string>();
        auto resolved = root_.resolve(join(base, path));
        if (!resolved) continue;
        struct stat st {};
        if (::lstat(resolved->absolute.c_str(), &st) != 0) continue;
        int kind = S_ISREG(st.st_mode) ? 0 : S_ISDIR(st.st_mode) ? 1 : S_ISLNK(st.st_mode) ? 2 : -1;
        if (kind < 0) continue;
        std::string target;
        std::uint64_t size = S_ISDIR(st.st_mode) ? 0 : static_cast<std::uint64_t>(st.st_size);
        if (kind == 2) {
          target.resize(static_cast<std::size_t>(st.st_size) + 1);
          ssize_t n = ::readlink(resolved->absolute.c_str(), target.data(), target.size());
          target.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
          size = target.size();
        }
        json hash = nullptr;
        if (kind == 0 && opt.hash_if(path)) {
          int fd = ::open(resolved->absolute.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
          if (fd >= 0) {
            std::vector<std::uint8_t> bytes(size);
            std::uint64_t got = 0;
            while (got < size) {
              ssize_t n = ::pread(fd, bytes.data() + got, size - got, static_cast<off_t>(got));
              if (n < 0 && errno == EINTR) continue;
              if (n <= 0) break;
              got += static_cast<std::uint64_t>(n);
            }
            ::close(fd);
            if (got == size) hash = hash_bytes(ferry::delta::hash128(bytes));
          }
        }
        long long mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1'000'000'000LL + st.st_mtim.tv_nsec;
        entries.push_back(json::array({path, kind, static_cast<unsigned>(st.st_mode & 07777), size, mtime_ns, target, hash}));
      }
      return protocol::make_result(r.id, json{{"entries", std::move(entries)}, {"swept", swept}});
    }
    auto lister = sync::TreeLister::open(w, std::move(opt));
    if (!lister) return io_error(base, lister.error());
    if (!p.contains("pageEntries") && !p.contains("pageMs")) {
      // A helper that does not page: everything in one reply, sorted, as before.
      std::vector<sync::TreeEntry> all;
      while (!lister->done()) {
        auto part = lister->next(std::size_t(-1));
        std::move(part.begin(), part.end(), std::back_inserter(all));
      }
      std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
      return protocol::make_result(r.id, json{{"entries", rows(all, python_only)},
                                              {"swept", swept},
                                              {"otherFilesystems", lister->take_other_filesystems()}});
    }
    listing->page_entries = static_cast<std::size_t>(std::clamp<std::int64_t>(
        p.contains("pageEntries") ? int_field(p, "pageEntries") : kMaxListPageEntries, 1, kMaxListPageEntries));
    listing->page_ms = std::clamp<std::int64_t>(p.contains("pageMs") ? int_field(p, "pageMs") : 1000, 1, 60'000);
    listing->lister.emplace(std::move(*lister));
    std::int64_t id;
    {
      std::lock_guard lock(listings_mu_);
      // A helper that went away mid-listing never sends its last page or a cancel: the oldest
      // unfinished listings (their open directories) are dropped for new ones.
      while (listings_.size() >= kMaxListings) listings_.erase(listings_.begin());
      id = next_listing_++;
      listings_.emplace(id, listing);
    }
    return page(listing, id, swept);
  }

  if (r.method == "sync/writeBatch") {
    const json& files = array_field(p, "files");
    std::vector<json> results(files.size());
    std::vector<std::string> paths(files.size());
    std::vector<std::vector<std::uint8_t>> contents(files.size());
    std::vector<sync::BatchFile> batch;
    std::vector<std::size_t> batch_index;  // batch entry -> position in `files`
    std::mutex batch_mu;
    // Decompressed concurrently; then written as one batch (see FileWriter::write_batch: the
    // fsyncs are paid once per batch and directory, not twice per file).
    std::atomic<std::size_t> next{0};
    auto unpack = [&] {
      for (std::size_t i; (i = next.fetch_add(1)) < files.size();) {
        const json& f = files[i];
        paths[i] = f.is_object() && f.contains("path") && f["path"].is_string() ? f["path"].get<std::string>() : "";
        try {
          auto attrs = attrs_of(f);
          auto expect = expect_of(f);
          auto bytes = decompress(bin_field(f, "data"), attrs.size);
          if (!bytes) {
            results[i] = error_entry(paths[i], {WriteErrc::bad_delta, bytes.error()}, &w);
            continue;
          }
          contents[i] = std::move(*bytes);
          std::lock_guard lock(batch_mu);
          batch.push_back(sync::BatchFile{paths[i], contents[i], attrs, expect});
          batch_index.push_back(i);
        } catch (const BadParams& e) {
          results[i] = error_entry(paths[i], {WriteErrc::invalid_path, e.message}, &w);
        }
      }
    };
    {
      std::vector<std::jthread> pool;
      const std::size_t n = std::min<std::size_t>(kWriteThreads, files.size());
      for (std::size_t t = 1; t < n; ++t) pool.emplace_back(unpack);
      unpack();
    }
    std::uint64_t written = 0;
    auto done = w.write_batch(batch, static_cast<unsigned>(kWriteThreads));
    for (std::size_t k = 0; k < batch.size(); ++k) {
      const std::size_t i = batch_index[k];
      if (!done[k]) {
        results[i] = error_entry(paths[i], done[k].error(), &w);
        continue;
      }
      written += batch[k].attrs.size;
      results[i] = ok_entry(paths[i]);
    }
    return protocol::make_result(r.id, json{{"results", std::move(results)}, {"bytesWritten", written}});
  }

  if (r.method == "sync/fileBegin") {
    std::string path = str_field(p, "path");
    {
      std::lock_guard lock(uploads_mu_);
      if (uploads_.size() >= kMaxUploads)
        return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": more than " + std::to_string(kMaxUploads) + " uploads open");
    }
    auto attrs = attrs_of(p);
    auto expect = expect_of(p);
    auto pending = w.begin_file(path, attrs);
    if (!pending) return io_error(path, pending.error());
    auto up = std::make_shared<Upload>(path, std::move(*pending), expect, attrs.size);
    std::lock_guard lock(uploads_mu_);
    std::int64_t handle = next_upload_++;
    std::string temp = up->file.temp_name();
    uploads_.emplace(handle, std::move(up));
    // The temp file's name lets sibling agents (other channels) write parts (sync/filePart).
    return protocol::make_result(r.id, json{{"handle", handle}, {"temp", std::move(temp)}});
  }

  if (r.method == "sync/fileAppend" || r.method == "sync/fileCommit" || r.method == "sync/fileAbort") {
    const std::int64_t handle = int_field(p, "handle");
    std::shared_ptr<Upload> held;
    {
      std::lock_guard lock(uploads_mu_);
      auto it = uploads_.find(handle);
      if (it == uploads_.end()) return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": no such upload");
      held = it->second;
      // Commit and abort finish the upload; later requests for it find nothing. (The scheduler
      // ran them after every earlier append of this handle.)
      if (r.method != "sync/fileAppend") uploads_.erase(it);
    }
    Upload& up = *held;
    // A failed append ends the upload; appends still running elsewhere hold it until they return.
    auto drop = [&] {
      std::lock_guard lock(uploads_mu_);
      if (auto it = uploads_.find(handle); it != uploads_.end() && it->second == held) uploads_.erase(it);
    };
    if (r.method == "sync/fileAbort") {
      std::lock_guard lock(up.mu);
      up.file.abort();  // removes its temp file
      return protocol::make_result(r.id, json{{"ok", true}});
    }
    if (r.method == "sync/fileAppend") {
      std::uint64_t raw_size = uint_field(p, "rawSize");
      // With `offset`, chunks may come in any order (the helper keeps several in flight); without
      // it, each goes after the furthest byte so far (the older, one-at-a-time helper).
      const bool at_offset = p.contains("offset");
      std::optional<std::uint64_t> offset;
      if (at_offset) offset = uint_field(p, "offset");
      if (raw_size > kMaxSyncPayload || (offset && (*offset > up.size || raw_size > up.size - *offset))) {
        drop();
        return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": bytes past the announced size");
      }
      if (p.value("placed", false)) {
        // A sibling agent wrote these bytes (sync/filePart): only the bookkeeping and the hash.
        if (!offset) return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": placed bytes need an offset");
        std::unique_lock lock(up.mu);
        if (auto done = up.file.mark_placed(*offset, raw_size); !done) {
          lock.unlock();
          drop();
          return io_error(up.path, done.error());
        }
        up.received = up.file.received();
        return protocol::make_result(r.id, json{{"received", up.received}});
      }
      // Decompressed outside the upload's lock: that is the work appends share between workers.
      auto bytes = decompress(bin_field(p, "data"), raw_size);
      if (!bytes) return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": " + bytes.error());
      std::unique_lock lock(up.mu);
      if (!offset && raw_size > up.size - up.received) {
        lock.unlock();
        drop();
        return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": bytes past the announced size");
      }
      if (auto done = offset ? up.file.write_at(*offset, *bytes) : up.file.write(*bytes); !done) {
        lock.unlock();
        drop();
        return io_error(up.path, done.error());
      }
      up.received = up.file.received();
      return protocol::make_result(r.id, json{{"received", up.received}});
    }
    std::lock_guard lock(up.mu);
    auto done = up.file.commit(up.expect);
    if (!done) return io_error(up.path, done.error());
    return protocol::make_result(r.id, json{{"path", up.path}, {"ok", true}});
  }

  if (r.method == "sync/filePart") {
    // Part of a file another agent of this helper is receiving (its sync/fileBegin named the temp
    // file): written in place here, recorded there by a placed sync/fileAppend.
    std::string path = str_field(p, "path");
    std::uint64_t raw_size = uint_field(p, "rawSize");
    if (raw_size > kMaxSyncPayload) return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": part too large");
    auto bytes = decompress(bin_field(p, "data"), raw_size);
    if (!bytes) return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": " + bytes.error());
    if (auto done = w.write_part(path, str_field(p, "temp"), uint_field(p, "offset"), *bytes); !done) return io_error(path, done.error());
    return protocol::make_result(r.id, json{{"ok", true}});
  }

  if (r.method == "sync/signature") {
    std::string path = str_field(p, "path");
    std::optional<ferry::delta::SignatureParams> params;
    if (p.contains("blockSize")) {
      ferry::delta::SignatureParams sp;
      sp.block_size = static_cast<std::uint32_t>(uint_field(p, "blockSize"));
      if (p.contains("strongLen")) sp.strong_len = static_cast<std::uint8_t>(uint_field(p, "strongLen"));
      if (auto ok = ferry::delta::validate_params(sp); !ok)
        return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": " + ok.error().message);
      params = sp;
    }
    if (p.contains("ranges")) {
      // Second level of a two-level delta: signatures of just these byte ranges.
      const json& ranges = array_field(p, "ranges");
      if (ranges.size() > 4096) throw BadParams{"'ranges' holds more than 4096 ranges"};
      json sigs = json::array();
      for (const auto& rg : ranges) {
        if (!rg.is_array() || rg.size() != 2 || !rg[0].is_number_unsigned() || !rg[1].is_number_unsigned())
          throw BadParams{"'ranges' must hold [offset, length] pairs"};
        auto sig = w.signature(path, params, std::pair{rg[0].get<std::uint64_t>(), rg[1].get<std::uint64_t>()});
        if (!sig) return io_error(path, sig.error());
        sigs.push_back(json::binary_t(std::move(*sig)));
      }
      return protocol::make_result(r.id, json{{"signatures", std::move(sigs)}});
    }
    auto sig = w.signature(path, params);
    if (!sig) return io_error(path, sig.error());
    return protocol::make_result(r.id, json{{"signature", json::binary_t(std::move(*sig))}});
  }

  if (r.method == "sync/applyDelta") {
    std::string path = str_field(p, "path");
    auto attrs = attrs_of(p);
    auto expect = expect_of(p);
    auto delta = decompress(bin_field(p, "delta"), uint_field(p, "deltaSize"));
    if (!delta) return protocol::make_error(r.id, ec::kInvalidParams, r.method + " '" + path + "': " + delta.error());
    auto done = w.apply_delta(path, *delta, attrs, expect);
    if (!done) return io_error(path, done.error());
    return protocol::make_result(r.id, json{{"path", path}, {"ok", true}});
  }

  if (r.method == "sync/delete") {
    // Files and links first, then directories (deepest first, as the helper orders them).
    json results = json::array();
    // {"path": {exists, size, mtimeNs}}: files that must still be what ferry wrote.
    const json* expect = p.contains("expect") ? &field(p, "expect") : nullptr;
    if (expect && !expect->is_object()) throw BadParams{"'expect' must be an object"};
    if (p.contains("paths"))
      for (const auto& e : array_field(p, "paths")) {
        if (!e.is_string()) throw BadParams{"'paths' must hold strings"};
        std::optional<sync::Precondition> pre;
        if (expect && expect->contains(e.get<std::string>())) pre = expect_of(json{{"expect", (*expect)[e.get<std::string>()]}});
        auto done = w.remove(e.get<std::string>(), pre);
        results.push_back(done ? ok_entry(e.get<std::string>()) : error_entry(e.get<std::string>(), done.error(), &w));
      }
    if (p.contains("dirs"))
      for (const auto& e : array_field(p, "dirs")) {
        if (!e.is_string()) throw BadParams{"'dirs' must hold strings"};
        auto done = w.remove_dir(e.get<std::string>());
        results.push_back(done ? ok_entry(e.get<std::string>()) : error_entry(e.get<std::string>(), done.error(), &w));
      }
    return protocol::make_result(r.id, json{{"results", std::move(results)}});
  }

  if (r.method == "sync/mkdir") {
    json results = json::array();
    for (const auto& d : array_field(p, "dirs")) {
      std::string path = str_field(d, "path");
      auto mode = d.contains("mode") ? static_cast<std::uint32_t>(uint_field(d, "mode")) & 07777 : 0755u;
      auto done = w.make_dirs(path, mode);
      // make_dirs leaves an existing dir's mode alone; the helper's plan wants it exact.
      if (done) done = w.set_attrs(path, mode, std::nullopt);
      results.push_back(done ? ok_entry(path) : error_entry(path, done.error(), &w));
    }
    return protocol::make_result(r.id, json{{"results", std::move(results)}});
  }

  if (r.method == "sync/symlink") {
    json results = json::array();
    for (const auto& l : array_field(p, "links")) {
      std::string path = str_field(l, "path");
      auto done = w.make_symlink(path, str_field(l, "target"));
      results.push_back(done ? ok_entry(path) : error_entry(path, done.error(), &w));
    }
    return protocol::make_result(r.id, json{{"results", std::move(results)}});
  }

  if (r.method == "sync/setAttrs") {
    json results = json::array();
    for (const auto& a : array_field(p, "entries")) {
      std::string path = str_field(a, "path");
      std::optional<std::int64_t> mtime;
      if (a.contains("mtimeNs") && !a["mtimeNs"].is_null()) mtime = int_field(a, "mtimeNs");
      auto done = w.set_attrs(path, static_cast<std::uint32_t>(uint_field(a, "mode")) & 07777, mtime);
      results.push_back(done ? ok_entry(path) : error_entry(path, done.error(), &w));
    }
    return protocol::make_result(r.id, json{{"results", std::move(results)}});
  }

  if (r.method == "sync/readDelta") {
    // Pull with deltas (read_delta.hpp): a delta from the helper's signed copy to this file.
    std::string path = str_field(p, "path");
    auto resolved = resolver.resolve(wire_path(path));
    if (!resolved) return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": " + resolved.error());
    if (source) {
      struct stat st {};
      if (::lstat(resolved->absolute.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        return protocol::make_error(r.id, ec::kInvalidParams, r.method + " '" + path + "': not a regular file", json{{"code", "not_found"}});
      if (auto refused = source_refuses(path, static_cast<std::uint64_t>(st.st_size))) return *refused;
    }
    sync::ReadDeltaRequest req;
    req.signature = bin_field(p, "signature");
    if (p.contains("fine")) {
      const json& fine = array_field(p, "fine");
      if (fine.size() > req.max_ranges) throw BadParams{"'fine' holds more than 4096 signatures"};
      for (const auto& f : fine) {
        if (!f.is_binary()) throw BadParams{"'fine' must hold byte strings"};
        req.fine.push_back(f.get_binary());
      }
    }
    req.ranges_only = p.value("rangesOnly", false);
    if (p.contains("maxDelta")) req.max_delta = std::min<std::uint64_t>(uint_field(p, "maxDelta"), kMaxSyncPayload / 2);
    auto got = sync::read_delta(resolved->absolute, req);
    if (!got) return io_error(path, got.error());
    json out{{"path", path}, {"size", got->size}, {"mtimeNs", got->mtime_ns}, {"mode", got->mode}, {"hash", hash_bytes(got->hash)}};
    if (got->ranges) {
      json rs = json::array();
      for (const auto& rg : *got->ranges) rs.push_back(json::array({rg.offset, rg.length}));
      out["ranges"] = std::move(rs);
    } else if (got->too_big) {
      out["tooBig"] = true;
    } else {
      out["deltaSize"] = got->delta.size();
      out["delta"] = compress(got->delta.data(), got->delta.size());
      out["literalBytes"] = got->stats.literal_bytes;
      out["copiedBytes"] = got->stats.copied_bytes;
    }
    return protocol::make_result(r.id, std::move(out));
  }

  if (r.method == "sync/read") {
    std::string path = str_field(p, "path");
    std::uint64_t offset = p.contains("offset") ? uint_field(p, "offset") : 0;
    std::uint64_t length = p.contains("length") ? uint_field(p, "length") : kMaxReadChunk;
    if (length > kMaxReadChunk) length = kMaxReadChunk;
    auto resolved = resolver.resolve(wire_path(path));
    if (!resolved) return protocol::make_error(r.id, ec::kInvalidParams, r.method + ": " + resolved.error());
    if (auto refused = source_refuses(path, 0)) return *refused;
    // O_NOFOLLOW: a symlink at the final component is never read through.
    int fd = ::open(resolved->absolute.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      return protocol::make_error(r.id, err == ENOENT ? ec::kInvalidParams : ec::kIoError,
                                  r.method + " '" + path + "': " + std::strerror(err),
                                  json{{"code", err == ENOENT ? "not_found" : "io"}});
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return protocol::make_error(r.id, ec::kInvalidParams, r.method + " '" + path + "': not a regular file",
                                  json{{"code", "wrong_kind"}});
    }
    std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
    if (auto refused = source_refuses(path, size)) {
      ::close(fd);
      return *refused;
    }
    std::uint64_t n = offset >= size ? 0 : std::min<std::uint64_t>(length, size - offset);
    std::vector<std::uint8_t> buf(n);
    std::uint64_t got = 0;
    while (got < n) {
      ssize_t k = ::pread(fd, buf.data() + got, n - got, static_cast<off_t>(offset + got));
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) break;
      got += static_cast<std::uint64_t>(k);
    }
    ::close(fd);
    buf.resize(got);
    long long mtime_ns = static_cast<long long>(st.st_mtim.tv_sec) * 1'000'000'000LL + st.st_mtim.tv_nsec;
    return protocol::make_result(r.id, json{{"path", path},
                                            {"offset", offset},
                                            {"rawSize", got},
                                            {"data", compress(buf.data(), buf.size())},
                                            {"size", size},
                                            {"mtimeNs", mtime_ns},
                                            {"mode", static_cast<unsigned>(st.st_mode & 07777)},
                                            {"eof", offset + got >= size}});
  }

  return protocol::make_error(r.id, ec::kMethodNotFound, "the agent has no method '" + r.method + "'");
}

}  // namespace ferry::agent
