// SyncClient against real ferry-agent processes (LocalEndpoint): every typed method once, the
// results checked on disk, plus the agent's typed -32602 for bad params. Bulk lanes are a second
// real agent on the same root, as an SSH link's extra channels are.
#define BOOST_TEST_MODULE sync_client
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <filesystem>

#include "helper/remote/local_endpoint.hpp"
#include "helper/sync/sync_client.hpp"
#include "protocol/delta/delta.hpp"
#include "protocol/delta/signature.hpp"
#include "protocol/payload_codec.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
namespace wire = ferry::protocol::sync_wire;
namespace ec = ferry::protocol::error_code;
using ferry::remote::LocalEndpoint;
using ferry::remote::LocalEndpointOptions;
using ferry::sync::SyncClient;
using nlohmann::json;

namespace {

std::vector<std::uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
wire::Bytes pack(const std::vector<std::uint8_t>& raw) { return ferry::protocol::compress_payload(raw.data(), raw.size()); }
std::vector<std::uint8_t> unpack(const wire::Bytes& packed, std::uint64_t size) {
  auto raw = ferry::protocol::decompress_payload(packed.data(), packed.size(), size);
  BOOST_TEST_REQUIRE(raw.has_value());
  return *raw;
}
wire::FileAttrs attrs_of(const std::vector<std::uint8_t>& raw, std::uint32_t mode = 0644) {
  return wire::FileAttrs{raw.size(), ferry::delta::hash128(raw), mode, 1'600'000'000'000'000'000LL};
}

// An endpoint whose bulk lane 0 is a second agent on the same root (an SSH link's extra channel).
class LaneEndpoint final : public ferry::remote::Endpoint {
 public:
  LaneEndpoint(Endpoint& main, Endpoint& lane) : main_(main), lane_(lane) {}
  std::expected<ferry::remote::AgentInfo, ferry::protocol::ResponseError> connect(std::chrono::milliseconds t) override {
    return main_.connect(t);
  }
  std::expected<json, ferry::protocol::ResponseError> call(std::string_view m, json p, std::chrono::milliseconds t) override {
    return main_.call(m, std::move(p), t);
  }
  std::expected<void, ferry::protocol::ResponseError> notify(std::string_view m, json p) override { return main_.notify(m, std::move(p)); }
  const ferry::remote::AgentInfo& info() const override { return main_.info(); }
  bool connected() const override { return main_.connected(); }
  void close() override {}
  std::string description() const override { return "lanes"; }
  std::size_t bulk_lanes() override { return 1; }
  std::expected<json, ferry::protocol::ResponseError> call_lane(std::size_t lane, std::string_view m, json p,
                                                                std::chrono::milliseconds t) override {
    if (lane != 0) return std::unexpected(ferry::protocol::ResponseError{ec::kAgentUnavailable, "no lane", {}});
    return lane_.call(m, std::move(p), t);
  }

 private:
  Endpoint& main_;
  Endpoint& lane_;
};

struct Agent {
  ferry::test::TempDir dir{"ferry-sync-client"};
  fs::path root = dir.path() / "sandbox";
  LocalEndpoint endpoint{LocalEndpointOptions{FERRY_AGENT_PATH, root, "default", {}}};
  SyncClient client{endpoint};
  const wire::Where at = wire::Where::at_base("proj");
  Agent() { BOOST_TEST_REQUIRE(endpoint.connect().has_value()); }
  fs::path file(const std::string& rel) const { return root / "proj" / rel; }

  void write(const std::string& path, const std::string& content) {
    const auto raw = bytes_of(content);
    auto r = client.write_batch(wire::WriteBatchParams{at, {wire::WriteFile{path, attrs_of(raw), std::nullopt, pack(raw), std::nullopt}}});
    BOOST_TEST_REQUIRE(r.has_value());
    BOOST_TEST_REQUIRE(r->results.size() == 1u);
    BOOST_TEST_REQUIRE(r->results[0].ok, path);
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(state_batch_list_and_read) {
  Agent a;
  auto s0 = a.client.state(a.at);
  BOOST_TEST_REQUIRE(s0.has_value());
  const auto one = bytes_of("first file\n"), two = bytes_of(std::string(5000, 'x'));
  wire::WriteBatchParams batch{a.at,
                               {wire::WriteFile{"a.txt", attrs_of(one), wire::Expect{}, pack(one), std::nullopt},
                                wire::WriteFile{"d/b.bin", attrs_of(two, 0600), std::nullopt, pack(two), std::nullopt},
                                // Claims the wrong size: refused alone, the others land.
                                wire::WriteFile{"bad", attrs_of(one), std::nullopt, pack(two), std::nullopt}}};
  auto w = a.client.write_batch(batch);
  BOOST_TEST_REQUIRE(w.has_value());
  BOOST_TEST_REQUIRE(w->results.size() == 3u);
  BOOST_TEST(w->results[0].ok);
  BOOST_TEST(w->results[1].ok);
  BOOST_TEST(!w->results[2].ok);
  BOOST_TEST(w->results[2].code.value_or("") == "bad_delta");
  BOOST_TEST(w->bytes_written.value_or(0) == one.size() + two.size());
  BOOST_TEST(text(a.file("a.txt")) == "first file\n");
  BOOST_TEST(((fs::status(a.file("d/b.bin")).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write)));
  BOOST_TEST(a.client.mutations() == 1u);
  // The write moved the generation.
  auto s1 = a.client.state(a.at);
  BOOST_TEST_REQUIRE(s1.has_value());
  BOOST_TEST(s1->generation > s0->generation);

  wire::ListParams all;
  all.where = a.at;
  all.known = std::vector<std::string>{"a.txt"};  // no hash for this one
  auto listed = a.client.list(all);
  BOOST_TEST_REQUIRE(listed.has_value());
  std::map<std::string, wire::ListEntry> by_path;
  for (const auto& e : listed->entries) by_path[e.path] = e;
  BOOST_TEST_REQUIRE(by_path.count("d/b.bin") == 1u);
  BOOST_TEST(by_path["d/b.bin"].size == two.size());
  BOOST_TEST(by_path["d/b.bin"].hash.has_value());
  BOOST_TEST((*by_path["d/b.bin"].hash == ferry::delta::hash128(two)));
  BOOST_TEST(!by_path["a.txt"].hash.has_value());
  BOOST_TEST(by_path["d"].kind == 1);
  // As the planner sees it, and what a later write of it expects to find.
  const auto tree = ferry::sync::tree_state_of(listed->entries);
  BOOST_TEST_REQUIRE(tree.count("d/b.bin") == 1u);
  BOOST_TEST((tree.at("d").kind == ferry::sync::EntryKind::dir));
  BOOST_TEST(tree.at("d/b.bin").mode == 0600u);
  BOOST_TEST((tree.at("d/b.bin").hash == ferry::delta::hash128(two)));
  const auto expect = ferry::sync::expect_of(tree, "a.txt");
  BOOST_TEST(expect.exists);
  BOOST_TEST(expect.size == one.size());
  BOOST_TEST(expect.mtime_ns == tree.at("a.txt").mtime_ns);
  BOOST_TEST(!ferry::sync::expect_of(tree, "nope").exists);

  // Paged: one entry a page, then the rest cancelled.
  wire::ListParams paged = all;
  paged.page_entries = 1;
  auto first = a.client.list(paged);
  BOOST_TEST_REQUIRE(first.has_value());
  BOOST_TEST(first->entries.size() == 1u);
  BOOST_TEST_REQUIRE(first->cursor.has_value());
  BOOST_TEST(a.client.cancel_listing(a.at, *first->cursor).has_value());
  wire::ListParams again;
  again.where = a.at;
  again.cursor = *first->cursor;
  auto gone = a.client.list(again);
  BOOST_TEST_REQUIRE(!gone.has_value());
  BOOST_TEST(gone.error().code == ec::kInvalidParams);

  // Sync on save: just the paths asked for.
  wire::ListParams only;
  only.where = a.at;
  only.only = std::vector<std::string>{"a.txt", "missing"};
  auto saved = a.client.list(only);
  BOOST_TEST_REQUIRE(saved.has_value());
  BOOST_TEST_REQUIRE(saved->entries.size() == 1u);
  BOOST_TEST(saved->entries[0].path == "a.txt");

  auto chunk = a.client.read(wire::ReadParams{a.at, "d/b.bin", 1000, 3000});
  BOOST_TEST_REQUIRE(chunk.has_value());
  BOOST_TEST(chunk->raw_size == 3000u);
  BOOST_TEST(chunk->size == two.size());
  BOOST_TEST(!chunk->eof);
  BOOST_TEST((unpack(chunk->data, chunk->raw_size) == std::vector<std::uint8_t>(two.begin() + 1000, two.begin() + 4000)));
  auto missing = a.client.read(wire::ReadParams{a.at, "nope", std::nullopt, std::nullopt});
  BOOST_TEST_REQUIRE(!missing.has_value());
  BOOST_TEST(missing.error().data.value_or(json::object()).value("code", "") == "not_found");
}

BOOST_AUTO_TEST_CASE(signature_apply_delta_and_read_delta) {
  Agent a;
  std::string base(200'000, 'a');
  for (std::size_t i = 0; i < base.size(); ++i) base[i] = static_cast<char>('a' + (i * 31 % 26));
  a.write("m.bin", base);
  std::string edited = base;
  edited.replace(100'000, 10, "0123456789");
  const auto next = bytes_of(edited);

  auto sig = a.client.signature(wire::SignatureParams{a.at, "m.bin", std::nullopt, std::nullopt, std::nullopt});
  BOOST_TEST_REQUIRE(sig.has_value());
  BOOST_TEST_REQUIRE(sig->signature.has_value());
  auto view = ferry::delta::SignatureView::parse(*sig->signature);
  BOOST_TEST_REQUIRE(view.has_value());
  std::vector<std::uint8_t> d;
  auto stats = ferry::delta::generate_delta(*view, next, d);
  BOOST_TEST_REQUIRE(stats.has_value());
  BOOST_TEST(stats->literal_bytes < 10'000u);
  wire::ListParams only_m;
  only_m.where = a.at;
  only_m.only = std::vector<std::string>{"m.bin"};
  auto listed = a.client.list(only_m);
  BOOST_TEST_REQUIRE(listed.has_value());
  BOOST_TEST_REQUIRE(listed->entries.size() == 1u);
  const wire::Expect expect{true, listed->entries[0].size, listed->entries[0].mtime_ns};
  auto applied = a.client.apply_delta(wire::ApplyDeltaParams{a.at, "m.bin", attrs_of(next), expect, pack(d), d.size()});
  BOOST_TEST_REQUIRE(applied.has_value(), (applied ? "" : applied.error().message));
  BOOST_TEST(applied->path == "m.bin");
  BOOST_TEST(text(a.file("m.bin")) == edited);

  // Range signatures (the second level of a two-level delta).
  auto ranged = a.client.signature(wire::SignatureParams{a.at, "m.bin", 4096, 8, std::vector<wire::Range>{{0, 8192}, {65536, 4096}}});
  BOOST_TEST_REQUIRE(ranged.has_value());
  BOOST_TEST_REQUIRE(ranged->signatures.has_value());
  BOOST_TEST(ranged->signatures->size() == 2u);

  // Pull: a delta from the helper's copy (`base`) to the agent's file (`edited`).
  std::vector<std::uint8_t> mine;
  const auto base_bytes = bytes_of(base);
  BOOST_TEST_REQUIRE(ferry::delta::write_signature(base_bytes, 0, base_bytes.size(), ferry::delta::default_params(base_bytes.size()), mine)
                         .has_value());
  auto back = a.client.read_delta(wire::ReadDeltaParams{a.at, "m.bin", mine, std::nullopt, false, std::nullopt});
  BOOST_TEST_REQUIRE(back.has_value());
  BOOST_TEST_REQUIRE(back->delta.has_value());
  BOOST_TEST(back->size == next.size());
  BOOST_TEST((back->hash == ferry::delta::hash128(next)));
  BOOST_TEST(back->literal_bytes < 10'000u);
  BOOST_TEST(unpack(*back->delta, back->delta_size).size() == back->delta_size);
}

BOOST_AUTO_TEST_CASE(streamed_file_with_a_bulk_lane) {
  Agent a;
  LocalEndpoint lane_agent{LocalEndpointOptions{FERRY_AGENT_PATH, a.root, "default", {}}};
  BOOST_TEST_REQUIRE(lane_agent.connect().has_value());
  LaneEndpoint lanes(a.endpoint, lane_agent);
  SyncClient client(lanes);
  BOOST_TEST(client.bulk_lanes() == 1u);

  std::vector<std::uint8_t> raw(3 * 65536);
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = static_cast<std::uint8_t>(i * 2654435761u >> 13);
  auto begun = client.file_begin(wire::FileBeginParams{a.at, "big.bin", attrs_of(raw), wire::Expect{}});
  BOOST_TEST_REQUIRE(begun.has_value());
  BOOST_TEST(!begun->temp.empty());
  auto chunk = [&](std::size_t i) { return std::vector<std::uint8_t>(raw.begin() + i * 65536, raw.begin() + (i + 1) * 65536); };
  // Chunk 2 first, by data; chunk 0 over the lane (placed); chunk 1 by data without... an offset.
  auto c2 = client.file_append(wire::FileAppendParams{a.at, begun->handle, 2 * 65536, 65536, false, pack(chunk(2))});
  BOOST_TEST_REQUIRE(c2.has_value(), (c2 ? "" : c2.error().message));
  BOOST_TEST_REQUIRE(client.file_part(0, wire::FilePartParams{a.at, "big.bin", begun->temp, 0, 65536, pack(chunk(0))}).has_value());
  auto c0 = client.file_append(wire::FileAppendParams{a.at, begun->handle, 0, 65536, true, std::nullopt});
  BOOST_TEST_REQUIRE(c0.has_value(), (c0 ? "" : c0.error().message));
  auto c1 = client.file_append(wire::FileAppendParams{a.at, begun->handle, 65536, 65536, false, pack(chunk(1))});
  BOOST_TEST_REQUIRE(c1.has_value());
  BOOST_TEST(c1->received == raw.size());
  // A lane that is not up: the caller falls back to the main agent.
  auto no_lane = client.file_part(1, wire::FilePartParams{a.at, "big.bin", begun->temp, 0, 1, pack({1})});
  BOOST_TEST_REQUIRE(!no_lane.has_value());
  BOOST_TEST(no_lane.error().code == ec::kAgentUnavailable);
  auto committed = client.file_commit(a.at, begun->handle);
  BOOST_TEST_REQUIRE(committed.has_value(), (committed ? "" : committed.error().message));
  BOOST_TEST(committed->path == "big.bin");
  BOOST_TEST((bytes_of(text(a.file("big.bin"))) == raw));
  BOOST_TEST(client.mutations() == 1u);  // the commit; begin and appends change nothing visible

  // An abandoned upload: abort removes its temp file, and the handle is gone.
  auto other = client.file_begin(wire::FileBeginParams{a.at, "gone.bin", attrs_of(raw), std::nullopt});
  BOOST_TEST_REQUIRE(other.has_value());
  BOOST_TEST(fs::exists(a.file(other->temp)));
  BOOST_TEST(client.file_abort(a.at, other->handle).has_value());
  BOOST_TEST(!fs::exists(a.file(other->temp)));
  BOOST_TEST(!fs::exists(a.file("gone.bin")));
  auto stale = client.file_commit(a.at, other->handle);
  BOOST_TEST_REQUIRE(!stale.has_value());
  BOOST_TEST(stale.error().message.find("no such upload") != std::string::npos, stale.error().message);
}

BOOST_AUTO_TEST_CASE(tree_ops) {
  Agent a;
  a.write("f.txt", "data");
  a.write("old/x.txt", "x");
  auto made = a.client.mkdir(wire::MkdirParams{a.at, {{"dir/sub", 0700}, {"plain", std::nullopt}}});
  BOOST_TEST_REQUIRE(made.has_value());
  BOOST_TEST(made->results.size() == 2u);
  BOOST_TEST(fs::is_directory(a.file("dir/sub")));
  BOOST_TEST(((fs::status(a.file("dir/sub")).permissions() & fs::perms::all) == fs::perms::owner_all));
  auto linked = a.client.symlink(wire::SymlinkParams{a.at, {{"link", "f.txt"}}});
  BOOST_TEST_REQUIRE(linked.has_value());
  BOOST_TEST(linked->results.at(0).ok);
  BOOST_TEST(fs::read_symlink(a.file("link")) == "f.txt");
  auto set = a.client.set_attrs(wire::SetAttrsParams{a.at, {{"f.txt", 0600, 1'000'000'000'000'000'000LL}, {"missing", 0600, std::nullopt}}});
  BOOST_TEST_REQUIRE(set.has_value());
  BOOST_TEST(set->results.at(0).ok);
  BOOST_TEST(!set->results.at(1).ok);
  struct stat st {};
  BOOST_TEST_REQUIRE(::stat(a.file("f.txt").c_str(), &st) == 0);
  BOOST_TEST(st.st_mtim.tv_sec == 1'000'000'000);
  BOOST_TEST((st.st_mode & 07777) == 0600u);
  // A delete whose expectation no longer holds is a conflict, not a removal.
  wire::DeleteParams del{a.at, {"f.txt", "old/x.txt"}, {"old", "plain"}, {{"f.txt", wire::Expect{true, 999, 1}}}};
  auto removed = a.client.remove(del);
  BOOST_TEST_REQUIRE(removed.has_value());
  BOOST_TEST_REQUIRE(removed->results.size() == 4u);
  BOOST_TEST(!removed->results[0].ok);
  BOOST_TEST(removed->results[0].code.value_or("") == "conflict");
  BOOST_TEST(fs::exists(a.file("f.txt")));
  BOOST_TEST(!fs::exists(a.file("old")));
  BOOST_TEST(!fs::exists(a.file("plain")));
  BOOST_TEST(a.client.mutations() == 6u);  // two writes, mkdir, symlink, setAttrs, delete
}

BOOST_AUTO_TEST_CASE(bad_params_are_typed_errors_from_the_agent) {
  Agent a;
  auto r = a.endpoint.call("sync/read", json{{"base", "proj"}});
  BOOST_TEST_REQUIRE(!r.has_value());
  BOOST_TEST(r.error().code == ec::kInvalidParams);
  BOOST_TEST(r.error().message.find("sync/read") != std::string::npos, r.error().message);
  BOOST_TEST(r.error().message.find("/path: is required") != std::string::npos, r.error().message);
  auto bad_hash = a.endpoint.call("sync/fileBegin", json{{"base", "proj"}, {"path", "f"}, {"size", 1}, {"hash", "not bytes"},
                                                         {"mode", 420}, {"mtimeNs", 0}});
  BOOST_TEST_REQUIRE(!bad_hash.has_value());
  BOOST_TEST(bad_hash.error().code == ec::kInvalidParams);
  BOOST_TEST(bad_hash.error().message.find("/hash") != std::string::npos, bad_hash.error().message);
  auto unknown = a.endpoint.call("sync/nope", json::object());
  BOOST_TEST_REQUIRE(!unknown.has_value());
  BOOST_TEST(unknown.error().code == ec::kMethodNotFound);
  // The agent is still serving after all of that.
  BOOST_TEST(a.client.state(a.at).has_value());
}
