// to_json/from_json of the agent's sync/* messages: see sync_wire.hpp.
#include "protocol/sync_wire.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace ferry::protocol::sync_wire {
namespace {

json binary(const Bytes& b) { return json::binary_t(b); }
json binary(Bytes&& b) { return json::binary(std::move(b)); }
json binary(const Hash128& h) { return json::binary_t(Bytes(h.begin(), h.end())); }

// Reads the fields of one object, first error sticky (ObjectReader's rules, plus the unsigned,
// binary and hash fields of this wire).
class Fields {
 public:
  Fields(const json& j, const std::string& ptr) : j_(j), ptr_(ptr) {
    if (!j.is_object()) error_ = DecodeError{ptr, "expected an object"};
  }
  const std::optional<DecodeError>& error() const { return error_; }
  bool has(const char* key) const { return !error_ && j_.contains(key) && !j_[key].is_null(); }
  std::string at(const char* key) const { return pointer_append(ptr_, key); }
  void fail(const char* key, std::string message) {
    if (!error_) error_ = DecodeError{at(key), std::move(message)};
  }

  template <class T>
  void req(const char* key, T& out) {
    if (error_) return;
    if (!j_.contains(key)) return fail(key, "is required");
    read(j_[key], out, at(key));
  }
  template <class T>
  void opt(const char* key, std::optional<T>& out) {
    if (!has(key)) return;
    T v{};
    read(j_[key], v, at(key));
    if (!error_) out = std::move(v);
  }
  template <class T>
  void opt(const char* key, T& out) {
    if (has(key)) read(j_[key], out, at(key));
  }

  void read(const json& v, std::string& out, const std::string& p) { set(read_value(v, out, p)); }
  void read(const json& v, bool& out, const std::string& p) { set(read_value(v, out, p)); }
  void read(const json& v, std::int64_t& out, const std::string& p) {
    if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
      return set(DecodeError{p, "is out of range"});
    if (!v.is_number_integer()) return set(DecodeError{p, "expected an integer"});
    out = v.get<std::int64_t>();
  }
  void read(const json& v, std::uint64_t& out, const std::string& p) {
    if (!v.is_number_integer()) return set(DecodeError{p, "expected an integer"});
    if (!v.is_number_unsigned() && v.get<std::int64_t>() < 0) return set(DecodeError{p, "must not be negative"});
    out = v.get<std::uint64_t>();
  }
  void read(const json& v, std::uint32_t& out, const std::string& p) {
    std::uint64_t n = 0;
    read(v, n, p);
    if (!error_ && n > std::numeric_limits<std::uint32_t>::max()) return set(DecodeError{p, "is out of range"});
    out = static_cast<std::uint32_t>(n);
  }
  void read(const json& v, int& out, const std::string& p) { set(read_value(v, out, p)); }
  void read(const json& v, Bytes& out, const std::string& p) {
    if (!v.is_binary()) return set(DecodeError{p, "expected a byte string"});
    out.assign(v.get_binary().begin(), v.get_binary().end());
  }
  // Borrowed, not copied: see Payload.
  void read(const json& v, Payload& out, const std::string& p) {
    if (!v.is_binary()) return set(DecodeError{p, "expected a byte string"});
    out.borrow(std::span<const std::uint8_t>(v.get_binary()));
  }
  void read(const json& v, Hash128& out, const std::string& p) {
    if (!v.is_binary() || v.get_binary().size() != 16) return set(DecodeError{p, "expected 16 bytes (xxh3-128)"});
    std::memcpy(out.data(), v.get_binary().data(), 16);
  }
  void read(const json& v, Range& out, const std::string& p) {
    if (!v.is_array() || v.size() != 2) return set(DecodeError{p, "expected an [offset, length] pair"});
    read(v[0], out.first, pointer_append(p, "0"));
    read(v[1], out.second, pointer_append(p, "1"));
  }
  template <class T>
    requires requires(const json& j, T& t, const std::string& s) { from_json(j, t, s); }
  void read(const json& v, T& out, const std::string& p) {
    set(from_json(v, out, p));
  }
  template <class T>
  void read(const json& v, std::vector<T>& out, const std::string& p) {
    if (!v.is_array()) return set(DecodeError{p, "expected an array"});
    out.assign(v.size(), T{});
    for (std::size_t i = 0; i < v.size() && !error_; ++i) read(v[i], out[i], pointer_append(p, std::to_string(i)));
  }
  template <class T>
  void read(const json& v, std::map<std::string, T>& out, const std::string& p) {
    if (!v.is_object()) return set(DecodeError{p, "expected an object"});
    for (auto it = v.begin(); it != v.end() && !error_; ++it) read(it.value(), out[it.key()], pointer_append(p, it.key()));
  }

  // base/source (absent base: the root).
  void where(Where& w) {
    opt("base", w.base);
    opt("source", w.source);
  }
  void attrs(FileAttrs& a) {
    req("size", a.size);
    req("hash", a.hash);
    req("mode", a.mode);
    req("mtimeNs", a.mtime_ns);
    a.mode &= 07777;
  }

 private:
  void set(std::optional<DecodeError> e) {
    if (!error_ && e) error_ = std::move(e);
  }
  const json& j_;
  std::string ptr_;
  std::optional<DecodeError> error_;
};

json where_json(const Where& w) { return w.source ? json{{"source", *w.source}} : json{{"base", w.base}}; }

void put_attrs(json& j, const FileAttrs& a) {
  j["size"] = a.size;
  j["hash"] = binary(a.hash);
  j["mode"] = a.mode;
  j["mtimeNs"] = a.mtime_ns;
}

template <class T>
json array_of(const std::vector<T>& v) {
  json out = json::array();
  for (const auto& e : v) out.push_back(to_json(e));
  return out;
}
json bytes_array(const std::vector<Bytes>& v) {
  json out = json::array();
  for (const auto& b : v) out.push_back(binary(b));
  return out;
}
json ranges_array(const std::vector<Range>& v) {
  json out = json::array();
  for (const auto& [o, l] : v) out.push_back(json::array({o, l}));
  return out;
}

}  // namespace

bool allows_source(std::string_view m) { return m == method::kList || m == method::kRead || m == method::kReadDelta; }

bool is_mutating(std::string_view m) {
  return m == method::kWriteBatch || m == method::kApplyDelta || m == method::kFileCommit || m == method::kDelete ||
         m == method::kMkdir || m == method::kSymlink || m == method::kSetAttrs;
}

// --- shared pieces ------------------------------------------------------------------------------

json to_json(const Expect& e) {
  if (!e.exists) return json{{"exists", false}};
  return json{{"exists", true}, {"size", e.size}, {"mtimeNs", e.mtime_ns}};
}
std::optional<DecodeError> from_json(const json& j, Expect& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.req("exists", out.exists);
  if (out.exists) {
    f.req("size", out.size);
    f.req("mtimeNs", out.mtime_ns);
  }
  return f.error();
}

json to_json(const PathResult& r) {
  json j{{"path", r.path}, {"ok", r.ok}};
  if (r.code) j["code"] = *r.code;
  if (r.message) j["message"] = *r.message;
  if (r.space) j["space"] = *r.space;
  return j;
}
std::optional<DecodeError> from_json(const json& j, PathResult& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.req("path", out.path);
  f.req("ok", out.ok);
  f.opt("code", out.code);
  f.opt("message", out.message);
  if (f.has("space")) out.space = j["space"];
  return f.error();
}

json to_json(const PathResults& r) {
  json j{{"results", array_of(r.results)}};
  if (r.bytes_written) j["bytesWritten"] = *r.bytes_written;
  return j;
}
std::optional<DecodeError> from_json(const json& j, PathResults& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.req("results", out.results);
  f.opt("bytesWritten", out.bytes_written);
  return f.error();
}

json to_json(const OkResult&) { return json{{"ok", true}}; }
std::optional<DecodeError> from_json(const json& j, OkResult&, const std::string& ptr) {
  Fields f(j, ptr);
  return f.error();
}

json to_json(const PathOk& r) { return json{{"path", r.path}, {"ok", true}}; }
std::optional<DecodeError> from_json(const json& j, PathOk& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.opt("path", out.path);
  return f.error();
}

// --- state, list --------------------------------------------------------------------------------

json to_json(const StateParams& p) { return where_json(p.where); }
std::optional<DecodeError> from_json(const json& j, StateParams& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.where(out.where);
  return f.error();
}

json to_json(const StateResult& r) { return json{{"epoch", r.epoch}, {"generation", r.generation}}; }
std::optional<DecodeError> from_json(const json& j, StateResult& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.opt("epoch", out.epoch);
  f.opt("generation", out.generation);
  return f.error();
}

json to_json(const ListParams& p) {
  json j = where_json(p.where);
  if (p.cursor) j["cursor"] = *p.cursor;
  if (p.cancel) j["cancel"] = true;
  if (p.known) j["known"] = *p.known;
  if (p.prune) j["prune"] = *p.prune;
  if (p.hash_under) j["hashUnder"] = *p.hash_under;
  if (p.only) j["only"] = *p.only;
  if (p.hash_all) j["hashAll"] = true;
  if (p.hash_at_most) j["hashAtMost"] = *p.hash_at_most;
  if (p.sweep) j["sweep"] = true;
  if (p.page_entries) j["pageEntries"] = *p.page_entries;
  if (p.page_ms) j["pageMs"] = *p.page_ms;
  return j;
}
std::optional<DecodeError> from_json(const json& j, ListParams& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.where(out.where);
  f.opt("cursor", out.cursor);
  f.opt("cancel", out.cancel);
  f.opt("known", out.known);
  f.opt("prune", out.prune);
  f.opt("hashUnder", out.hash_under);
  f.opt("only", out.only);
  f.opt("hashAll", out.hash_all);
  f.opt("hashAtMost", out.hash_at_most);
  f.opt("sweep", out.sweep);
  f.opt("pageEntries", out.page_entries);
  f.opt("pageMs", out.page_ms);
  return f.error();
}

json to_json(const ListEntry& e) {
  return json::array({e.path, e.kind, e.mode, e.size, e.mtime_ns, e.link_target, e.hash ? binary(*e.hash) : json(nullptr)});
}
std::optional<DecodeError> from_json(const json& j, ListEntry& out, const std::string& ptr) {
  if (!j.is_array() || j.size() < 6) return DecodeError{ptr, "expected [path, kind, mode, size, mtimeNs, linkTarget, hash]"};
  static const json kNoObject = json::object();
  Fields f(kNoObject, ptr);
  f.read(j[0], out.path, pointer_append(ptr, "0"));
  f.read(j[1], out.kind, pointer_append(ptr, "1"));
  f.read(j[2], out.mode, pointer_append(ptr, "2"));
  f.read(j[3], out.size, pointer_append(ptr, "3"));
  f.read(j[4], out.mtime_ns, pointer_append(ptr, "4"));
  f.read(j[5], out.link_target, pointer_append(ptr, "5"));
  // A hash that is not 16 bytes reads as none, as the engine's from_listing did.
  if (j.size() > 6 && j[6].is_binary() && j[6].get_binary().size() == 16) {
    Hash128 h{};
    std::memcpy(h.data(), j[6].get_binary().data(), 16);
    out.hash = h;
  }
  return f.error();
}

json to_json(const ListResult& r) {
  json j{{"entries", array_of(r.entries)}};
  if (r.swept) j["swept"] = *r.swept;
  if (r.listed) j["listed"] = *r.listed;
  if (r.other_filesystems) j["otherFilesystems"] = *r.other_filesystems;
  if (r.cursor) j["cursor"] = *r.cursor;
  if (r.cancelled) j["cancelled"] = true;
  if (r.stamp) j["stamp"] = to_json(*r.stamp);
  return j;
}
std::optional<DecodeError> from_json(const json& j, ListResult& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.req("entries", out.entries);
  f.opt("swept", out.swept);
  f.opt("listed", out.listed);
  f.opt("otherFilesystems", out.other_filesystems);
  f.opt("cursor", out.cursor);
  f.opt("cancelled", out.cancelled);
  f.opt("stamp", out.stamp);
  return f.error();
}

// --- read, readDelta, signature -----------------------------------------------------------------

json to_json(const ReadParams& p) {
  json j = where_json(p.where);
  j["path"] = p.path;
  if (p.offset) j["offset"] = *p.offset;
  if (p.length) j["length"] = *p.length;
  return j;
}
std::optional<DecodeError> from_json(const json& j, ReadParams& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.where(out.where);
  f.req("path", out.path);
  f.opt("offset", out.offset);
  f.opt("length", out.length);
  return f.error();
}

json to_json(const ReadResult& r) { return to_json(ReadResult(r)); }
// The agent's replies move their chunk into the message (8 MiB each on a pull).
json to_json(ReadResult&& r) {
  json j{{"path", r.path}, {"offset", r.offset},     {"rawSize", r.raw_size}, {"data", binary(std::move(r.data))},
         {"size", r.size}, {"mtimeNs", r.mtime_ns}, {"mode", r.mode},        {"eof", r.eof}};
  if (r.stored) j["stored"] = true;
  return j;
}
std::optional<DecodeError> from_json(const json& j, ReadResult& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.opt("path", out.path);
  f.opt("offset", out.offset);
  f.req("rawSize", out.raw_size);
  f.req("data", out.data);
  f.opt("stored", out.stored);
  f.req("size", out.size);
  f.req("mtimeNs", out.mtime_ns);
  f.opt("mode", out.mode);
  f.opt("eof", out.eof);
  return f.error();
}

json to_json(const ReadDeltaParams& p) {
  json j = where_json(p.where);
  j["path"] = p.path;
  j["signature"] = binary(p.signature);
  if (p.fine) j["fine"] = bytes_array(*p.fine);
  if (p.ranges_only) j["rangesOnly"] = true;
  if (p.max_delta) j["maxDelta"] = *p.max_delta;
  return j;
}
std::optional<DecodeError> from_json(const json& j, ReadDeltaParams& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.where(out.where);
  f.req("path", out.path);
  f.req("signature", out.signature);
  f.opt("fine", out.fine);
  f.opt("rangesOnly", out.ranges_only);
  f.opt("maxDelta", out.max_delta);
  return f.error();
}

json to_json(const ReadDeltaResult& r) {
  json j{{"path", r.path}, {"size", r.size}, {"mtimeNs", r.mtime_ns}, {"mode", r.mode}, {"hash", binary(r.hash)}};
  if (r.ranges) {
    j["ranges"] = ranges_array(*r.ranges);
  } else if (r.too_big) {
    j["tooBig"] = true;
  } else if (r.delta) {
    j["deltaSize"] = r.delta_size;
    j["delta"] = binary(*r.delta);
    j["literalBytes"] = r.literal_bytes;
    j["copiedBytes"] = r.copied_bytes;
  }
  return j;
}
std::optional<DecodeError> from_json(const json& j, ReadDeltaResult& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.opt("path", out.path);
  f.req("size", out.size);
  f.req("mtimeNs", out.mtime_ns);
  f.opt("mode", out.mode);
  f.req("hash", out.hash);
  f.opt("ranges", out.ranges);
  f.opt("tooBig", out.too_big);
  f.opt("delta", out.delta);
  f.opt("deltaSize", out.delta_size);
  f.opt("literalBytes", out.literal_bytes);
  f.opt("copiedBytes", out.copied_bytes);
  return f.error();
}

json to_json(const SignatureParams& p) {
  json j = where_json(p.where);
  j["path"] = p.path;
  if (p.block_size) j["blockSize"] = *p.block_size;
  if (p.strong_len) j["strongLen"] = *p.strong_len;
  if (p.ranges) j["ranges"] = ranges_array(*p.ranges);
  return j;
}
std::optional<DecodeError> from_json(const json& j, SignatureParams& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.where(out.where);
  f.req("path", out.path);
  f.opt("blockSize", out.block_size);
  f.opt("strongLen", out.strong_len);
  f.opt("ranges", out.ranges);
  if (out.ranges && out.ranges->size() > 4096) f.fail("ranges", "holds more than 4096 ranges");
  return f.error();
}

json to_json(const SignatureResult& r) {
  json j = json::object();
  if (r.signature) j["signature"] = binary(*r.signature);
  if (r.signatures) j["signatures"] = bytes_array(*r.signatures);
  return j;
}
std::optional<DecodeError> from_json(const json& j, SignatureResult& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.opt("signature", out.signature);
  f.opt("signatures", out.signatures);
  if (!f.error() && !out.signature && !out.signatures) f.fail("signature", "is required (or signatures)");
  return f.error();
}

// --- writes -------------------------------------------------------------------------------------

json to_json(const PrepareDeltaParams& p) {
  json j = where_json(p.where);
  j["path"] = p.path;
  j["expect"] = p.expect ? to_json(*p.expect) : json(nullptr);
  if (p.cancel) j["cancel"] = true;
  return j;
}
std::optional<DecodeError> from_json(const json& j, PrepareDeltaParams& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.where(out.where);
  f.req("path", out.path);
  f.opt("expect", out.expect);
  f.opt("cancel", out.cancel);
  return f.error();
}

json to_json(const PrepareDeltaResult& r) { return json{{"started", r.started}}; }
std::optional<DecodeError> from_json(const json& j, PrepareDeltaResult& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.req("started", out.started);
  return f.error();
}

json to_json(const ApplyDeltaParams& p) { return to_json(ApplyDeltaParams(p)); }
json to_json(ApplyDeltaParams&& p) {
  json j = where_json(p.where);
  j["path"] = p.path;
  put_attrs(j, p.attrs);
  j["delta"] = binary(std::move(p.delta));
  j["deltaSize"] = p.delta_size;
  j["expect"] = p.expect ? to_json(*p.expect) : json(nullptr);
  return j;
}
std::optional<DecodeError> from_json(const json& j, ApplyDeltaParams& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.where(out.where);
  f.req("path", out.path);
  f.attrs(out.attrs);
  f.opt("expect", out.expect);
  f.req("delta", out.delta);
  f.req("deltaSize", out.delta_size);
  return f.error();
}

json to_json(const WriteFile& w) { return to_json(WriteFile(w)); }
json to_json(WriteFile&& w) {
  json j{{"path", w.path}, {"data", binary(std::move(w.data))}};
  put_attrs(j, w.attrs);
  j["expect"] = w.expect ? to_json(*w.expect) : json(nullptr);
  return j;
}
std::optional<DecodeError> from_json(const json& j, WriteFile& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.req("path", out.path);
  f.attrs(out.attrs);
  f.opt("expect", out.expect);
  f.req("data", out.data);
  return f.error();
}

json to_json(const WriteBatchParams& p) {
  json j = where_json(p.where);
  j["files"] = array_of(p.files);
  return j;
}
json to_json(WriteBatchParams&& p) {
  json j = where_json(p.where);
  json files = json::array();
  for (auto& f : p.files) files.push_back(to_json(std::move(f)));
  j["files"] = std::move(files);
  return j;
}
std::optional<DecodeError> from_json(const json& j, WriteBatchParams& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.where(out.where);
  if (f.error()) return f.error();
  if (!j.contains("files")) return DecodeError{f.at("files"), "is required"};
  const json& files = j["files"];
  if (!files.is_array()) return DecodeError{f.at("files"), "expected an array"};
  out.files.assign(files.size(), WriteFile{});
  for (std::size_t i = 0; i < files.size(); ++i) {
    // A malformed file is answered in its own result entry; the others are still written.
    if (auto e = from_json(files[i], out.files[i], "")) {
      if (out.files[i].path.empty() && files[i].is_object() && files[i].contains("path") && files[i]["path"].is_string())
        out.files[i].path = files[i]["path"].get<std::string>();
      out.files[i].invalid = e->pointer.empty() ? e->message : "'" + e->pointer.substr(1) + "' " + e->message;
    }
  }
  return std::nullopt;
}

json to_json(const FileBeginParams& p) {
  json j = where_json(p.where);
  j["path"] = p.path;
  put_attrs(j, p.attrs);
  j["expect"] = p.expect ? to_json(*p.expect) : json(nullptr);
  return j;
}
std::optional<DecodeError> from_json(const json& j, FileBeginParams& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.where(out.where);
  f.req("path", out.path);
  f.attrs(out.attrs);
  f.opt("expect", out.expect);
  return f.error();
}

json to_json(const FileBeginResult& r) { return json{{"handle", r.handle}, {"temp", r.temp}}; }
std::optional<DecodeError> from_json(const json& j, FileBeginResult& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.req("handle", out.handle);
  f.opt("temp", out.temp);
  return f.error();
}

json to_json(const FilePartParams& p) { return to_json(FilePartParams(p)); }
json to_json(FilePartParams&& p) {
  json j = where_json(p.where);
  j["path"] = p.path;
  j["temp"] = p.temp;
  j["offset"] = p.offset;
  j["rawSize"] = p.raw_size;
  j["data"] = binary(std::move(p.data).take());
  if (p.stored) j["stored"] = true;
  return j;
}
std::optional<DecodeError> from_json(const json& j, FilePartParams& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.where(out.where);
  f.req("path", out.path);
  f.req("temp", out.temp);
  f.req("offset", out.offset);
  f.req("rawSize", out.raw_size);
  f.req("data", out.data);
  f.opt("stored", out.stored);
  return f.error();
}

json to_json(const FileAppendParams& p) { return to_json(FileAppendParams(p)); }
json to_json(FileAppendParams&& p) {
  json j = where_json(p.where);
  j["handle"] = p.handle;
  if (p.offset) j["offset"] = *p.offset;
  j["rawSize"] = p.raw_size;
  if (p.placed) j["placed"] = true;
  if (p.data) j["data"] = binary(std::move(*p.data).take());
  if (p.stored) j["stored"] = true;
  return j;
}
std::optional<DecodeError> from_json(const json& j, FileAppendParams& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.where(out.where);
  f.req("handle", out.handle);
  f.opt("offset", out.offset);
  f.req("rawSize", out.raw_size);
  f.opt("placed", out.placed);
  f.opt("data", out.data);
  f.opt("stored", out.stored);
  if (!f.error() && !out.placed && !out.data) f.fail("data", "is required (unless placed)");
  if (!f.error() && out.placed && !out.offset) f.fail("offset", "is required with placed bytes");
  return f.error();
}

json to_json(const FileAppendResult& r) { return json{{"received", r.received}}; }
std::optional<DecodeError> from_json(const json& j, FileAppendResult& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.req("received", out.received);
  return f.error();
}

json to_json(const FileHandleParams& p) {
  json j = where_json(p.where);
  j["handle"] = p.handle;
  return j;
}
std::optional<DecodeError> from_json(const json& j, FileHandleParams& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.where(out.where);
  f.req("handle", out.handle);
  return f.error();
}

// --- tree ops -----------------------------------------------------------------------------------

json to_json(const MkdirEntry& e) {
  json j{{"path", e.path}};
  if (e.mode) j["mode"] = *e.mode;
  return j;
}
std::optional<DecodeError> from_json(const json& j, MkdirEntry& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.req("path", out.path);
  f.opt("mode", out.mode);
  if (out.mode) *out.mode &= 07777;
  return f.error();
}
json to_json(const MkdirParams& p) {
  json j = where_json(p.where);
  j["dirs"] = array_of(p.dirs);
  return j;
}
std::optional<DecodeError> from_json(const json& j, MkdirParams& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.where(out.where);
  f.req("dirs", out.dirs);
  return f.error();
}

json to_json(const SymlinkEntry& e) { return json{{"path", e.path}, {"target", e.target}}; }
std::optional<DecodeError> from_json(const json& j, SymlinkEntry& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.req("path", out.path);
  f.req("target", out.target);
  return f.error();
}
json to_json(const SymlinkParams& p) {
  json j = where_json(p.where);
  j["links"] = array_of(p.links);
  return j;
}
std::optional<DecodeError> from_json(const json& j, SymlinkParams& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.where(out.where);
  f.req("links", out.links);
  return f.error();
}

json to_json(const SetAttrsEntry& e) {
  return json{{"path", e.path}, {"mode", e.mode}, {"mtimeNs", e.mtime_ns ? json(*e.mtime_ns) : json(nullptr)}};
}
std::optional<DecodeError> from_json(const json& j, SetAttrsEntry& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.req("path", out.path);
  f.req("mode", out.mode);
  f.opt("mtimeNs", out.mtime_ns);
  out.mode &= 07777;
  return f.error();
}
json to_json(const SetAttrsParams& p) {
  json j = where_json(p.where);
  j["entries"] = array_of(p.entries);
  return j;
}
std::optional<DecodeError> from_json(const json& j, SetAttrsParams& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.where(out.where);
  f.req("entries", out.entries);
  return f.error();
}

json to_json(const DeleteParams& p) {
  json j = where_json(p.where);
  j["paths"] = p.paths;
  if (!p.dirs.empty()) j["dirs"] = p.dirs;
  if (!p.expect.empty()) {
    json e = json::object();
    for (const auto& [path, x] : p.expect) e[path] = to_json(x);
    j["expect"] = std::move(e);
  }
  return j;
}
std::optional<DecodeError> from_json(const json& j, DeleteParams& out, const std::string& ptr) {
  Fields f(j, ptr);
  f.where(out.where);
  f.opt("paths", out.paths);
  f.opt("dirs", out.dirs);
  f.opt("expect", out.expect);
  return f.error();
}

}  // namespace ferry::protocol::sync_wire
