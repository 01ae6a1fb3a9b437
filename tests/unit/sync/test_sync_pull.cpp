// Pull with deltas over LocalEndpoint and the real ferry-agent: a 1-byte remote change in a big
// file comes back as a small delta (also when the file is named and its local copy is read
// during the listing), a local edit during the pull is a conflict that keeps the
// local bytes, remote symlinks never lead a local write outside the root, a bad delta from the
// agent fails just that file, a whole-file pull does not hold the file in memory, and a new big
// file is not hashed on the box before it moves (only where a local copy needs comparing).
#define BOOST_TEST_MODULE sync_pull
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "helper/remote/local_endpoint.hpp"
#include "helper/sync/file_index.hpp"
#include "helper/sync/sync_engine.hpp"
#include "protocol/payload_codec.hpp"
#include "tests/support/random_bytes.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/sandbox_agent.hpp"

using namespace ferry::sync;
namespace fs = std::filesystem;
using ferry::test::write_file;
using ferry::test::read_bytes;
using Buf = std::vector<std::uint8_t>;
using ferry::remote::LocalEndpoint;
using ferry::remote::LocalEndpointOptions;
using json = nlohmann::json;

namespace {

Buf text(const std::string& s) { return Buf(s.begin(), s.end()); }
using ferry::test::random_bytes;

// Flips one byte in place (the file keeps its size; its mtime moves).
void flip_byte(const fs::path& p, std::uint64_t at) {
  std::fstream f(p, std::ios::binary | std::ios::in | std::ios::out);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5a);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(&c, 1);
}
// Pull's temp files left anywhere under `dir`.
std::size_t temp_files(const fs::path& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().starts_with(".ferry-tmp.")) ++n;
  return n;
}

// An endpoint in front of the real one; subclasses look at, or change, what `call` returns.
class PassThrough : public ferry::remote::Endpoint {
 public:
  explicit PassThrough(ferry::remote::Endpoint& real) : real_(real) {}
  std::expected<ferry::remote::AgentInfo, ferry::remote::ResponseError> connect(std::chrono::milliseconds t) override {
    return real_.connect(t);
  }
  std::expected<json, ferry::remote::ResponseError> call(std::string_view method, json params, std::chrono::milliseconds t) override {
    return real_.call(method, std::move(params), t);
  }
  std::expected<void, ferry::remote::ResponseError> notify(std::string_view m, json p) override { return real_.notify(m, std::move(p)); }
  [[nodiscard]] ferry::remote::Subscription subscribe(ferry::remote::NotificationHandler h) override { return real_.subscribe(std::move(h)); }
  const ferry::remote::AgentInfo& info() const override { return real_.info(); }
  bool connected() const override { return real_.connected(); }
  void close() override {}
  std::string description() const override { return "via " + real_.description(); }

 private:
  ferry::remote::Endpoint& real_;
};

// Corrupts sync/readDelta's delta (the agent's reply is the outside input pull must not trust).
class CorruptingEndpoint : public PassThrough {
 public:
  enum class Damage { truncate, flip_literal };
  CorruptingEndpoint(ferry::remote::Endpoint& real, Damage d) : PassThrough(real), damage_(d) {}
  std::expected<json, ferry::remote::ResponseError> call(std::string_view method, json params, std::chrono::milliseconds t) override {
    auto r = PassThrough::call(method, std::move(params), t);
    if (method != "sync/readDelta" || !r || !r->contains("delta")) return r;
    const auto& packed = r->at("delta").get_binary();
    auto d = ferry::protocol::decompress_payload(packed.data(), packed.size(), r->at("deltaSize").get<std::uint64_t>());
    BOOST_REQUIRE(d.has_value());
    if (damage_ == Damage::truncate) d->resize(d->size() / 2);
    else (*d)[d->size() / 2] ^= 0x40;  // inside the literal: only the whole-file hash can tell
    (*r)["deltaSize"] = d->size();
    (*r)["delta"] = json::binary_t(ferry::protocol::compress_payload(d->data(), d->size()));
    ++corrupted;
    return r;
  }
  int corrupted = 0;

 private:
  Damage damage_;
};

// Keeps what sync/list was asked and what it answered: which rows came hashed, which paths an
// `only` listing named.
class ListSpy : public PassThrough {
 public:
  using PassThrough::PassThrough;
  std::expected<json, ferry::remote::ResponseError> call(std::string_view method, json params, std::chrono::milliseconds t) override {
    const bool list = method == "sync/list";
    if (list && params.contains("only"))
      for (const auto& p : params.at("only")) only_paths.push_back(p.get<std::string>());
    auto r = PassThrough::call(method, std::move(params), t);
    if (list && r && r->contains("entries"))
      for (const auto& row : r->at("entries"))
        if (row.size() > 6) hashed[row[0].get<std::string>()] = row[6].is_binary();
    return r;
  }
  std::map<std::string, bool> hashed;  // path -> came with a hash (the last listing that named it)
  std::vector<std::string> only_paths;
};

// A local project, a sandbox agent whose <sandbox>/proj is the remote side.
struct Fixture {
  ferry::test::TempDir t{"ferry-pull"};
  fs::path local = t / "local";
  fs::path sandbox = t / "sandbox";
  fs::path remote = sandbox / "proj";
  std::unique_ptr<LocalEndpoint> ep;

  Fixture() {
    fs::create_directories(local);
    fs::create_directories(remote);
    ep = ferry::test::connect_sandbox_agent(FERRY_AGENT_PATH, sandbox);
  }
  SyncEngine engine(ferry::remote::Endpoint* via = nullptr) {
    return SyncEngine(via ? *via : *ep, SyncTarget{local, "proj", "local", "~/proj", {}, {}});
  }
  SyncSummary pull(std::vector<std::string> paths, SyncOptions o = {}, ferry::remote::Endpoint* via = nullptr) {
    auto s = engine(via).pull(paths, o);
    BOOST_REQUIRE_MESSAGE(s.has_value(), (s ? "" : s.error().message));
    for (const auto& e : s->errors) BOOST_TEST_MESSAGE("pull error: " << e);
    return *s;
  }
  // The same bytes on both sides, and the manifest knowing it (as after an earlier pull).
  void in_sync(const std::string& rel, const Buf& content) {
    write_file(remote / rel, content);
    write_file(local / rel, content);
    SyncOptions force;
    force.force = true;
    SyncSummary s = pull({rel}, force);
    BOOST_REQUIRE_EQUAL(s.unchanged, 1u);
  }
};

// A /proc/self/status field in KiB ("VmHWM", "VmRSS").
std::uint64_t status_kib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with(field + ":")) return std::stoull(line.substr(field.size() + 1));
  BOOST_FAIL("no " << field << " in /proc/self/status");
  return 0;
}
std::uint64_t vm_hwm_kib() { return status_kib("VmHWM"); }

}  // namespace

BOOST_AUTO_TEST_CASE(a_one_byte_remote_change_pulls_as_a_small_delta) {
  Fixture f;
  const Buf big = random_bytes(40u << 20, 1);     // two levels (1 MiB, then 1 KiB blocks)
  const Buf medium = random_bytes(1u << 20, 2);   // one level
  f.in_sync("ckpt/model.pt", big);
  f.in_sync("ckpt/opt.pt", medium);
  flip_byte(f.remote / "ckpt/model.pt", 23'456'789);
  flip_byte(f.remote / "ckpt/opt.pt", 500'000);
  ::chmod((f.remote / "ckpt/model.pt").c_str(), 0755);
  // Written a while ago (a hash taken within 2 s of a file's mtime is not trusted later).
  fs::last_write_time(f.remote / "ckpt/model.pt", fs::file_time_type::clock::now() - std::chrono::hours(1));

  SyncSummary s = f.pull({"ckpt"});
  BOOST_TEST(s.errors.empty());
  BOOST_TEST(s.conflicts.empty());
  BOOST_TEST(s.files_sent == 2u);
  BOOST_TEST_MESSAGE("1-byte changes in 40 MiB + 1 MiB: " << s.bytes_on_wire << " bytes on the wire, " << s.bytes_literal
                                                           << " literal, " << s.bytes_matched << " matched");
  BOOST_TEST(s.bytes_on_wire < 64u * 1024);
  BOOST_TEST(s.bytes_literal < 16u * 1024);
  BOOST_TEST(s.bytes_matched > big.size() + medium.size() - 16u * 1024);
  BOOST_TEST((read_bytes(f.local / "ckpt/model.pt") == read_bytes(f.remote / "ckpt/model.pt")));
  BOOST_TEST((read_bytes(f.local / "ckpt/opt.pt") == read_bytes(f.remote / "ckpt/opt.pt")));
  BOOST_TEST((fs::last_write_time(f.local / "ckpt/model.pt") == fs::last_write_time(f.remote / "ckpt/model.pt")));
  BOOST_TEST((fs::status(f.local / "ckpt/model.pt").permissions() == fs::perms(0755)));
  BOOST_TEST(temp_files(f.local) == 0u);

  // What pull wrote is in the hash index (the engine persisted it when it closed): the next
  // push or pull does not read 40 MiB again to know it.
  auto index = FileIndex::load(default_index_path(f.local));
  BOOST_REQUIRE(index.has_value());
  struct stat st {};
  BOOST_REQUIRE(::stat((f.local / "ckpt/model.pt").c_str(), &st) == 0);
  const IndexKey key{static_cast<std::uint64_t>(st.st_size), st.st_mtim.tv_sec * 1'000'000'000LL + st.st_mtim.tv_nsec,
                     static_cast<std::uint32_t>(st.st_mode & 07777), static_cast<std::uint64_t>(st.st_ino)};
  const auto cached = index->lookup("ckpt/model.pt", key);
  BOOST_REQUIRE(cached.has_value());
  BOOST_TEST((*cached == ferry::delta::hash128(read_bytes(f.local / "ckpt/model.pt"))));

  // Pulled again: nothing moves.
  SyncSummary again = f.pull({"ckpt"});
  BOOST_TEST(again.files_sent == 0u);
  BOOST_TEST(again.unchanged == 2u);
}

BOOST_AUTO_TEST_CASE(a_big_file_named_outright_is_read_during_the_listing_and_pulls_right) {
  Fixture f;
  const Buf big = random_bytes(40u << 20, 11);
  // Hashed right after it was written: the index does not trust that hash, so the plan needs
  // the one the prep read.
  f.in_sync("ckpt/model.pt", big);
  flip_byte(f.remote / "ckpt/model.pt", 30'000'001);
  SyncSummary s = f.pull({"ckpt/model.pt"});
  BOOST_TEST(s.errors.empty());
  BOOST_TEST(s.conflicts.empty());
  BOOST_TEST(s.files_sent == 1u);
  BOOST_TEST(s.bytes_on_wire < 64u * 1024);
  BOOST_TEST((read_bytes(f.local / "ckpt/model.pt") == read_bytes(f.remote / "ckpt/model.pt")));

  // The local copy rewritten in place after that read, its mtime put back (so stat cannot tell):
  // the signature read before no longer fits it, and the patch's whole-file hash says so. That
  // file fails; the local bytes stay.
  flip_byte(f.remote / "ckpt/model.pt", 1'000);
  const Buf mine = random_bytes(40u << 20, 12);
  SyncOptions o;
  o.before_transfer = [&] {
    const auto mtime = fs::last_write_time(f.local / "ckpt/model.pt");
    write_file(f.local / "ckpt/model.pt", mine);
    fs::last_write_time(f.local / "ckpt/model.pt", mtime);
  };
  SyncSummary changed = f.pull({"ckpt/model.pt"}, o);
  BOOST_TEST(changed.files_sent == 0u);
  BOOST_TEST(changed.errors.size() == 1u);
  BOOST_TEST((read_bytes(f.local / "ckpt/model.pt") == mine));
  BOOST_TEST(temp_files(f.local) == 0u);
}

BOOST_AUTO_TEST_CASE(a_local_edit_during_the_pull_is_a_conflict_and_keeps_the_local_bytes) {
  Fixture f;
  f.in_sync("out/big.bin", random_bytes(1u << 20, 3));  // the delta path
  f.in_sync("out/log.txt", text("epoch 1\n"));          // the whole-file path
  flip_byte(f.remote / "out/big.bin", 1000);
  write_file(f.remote / "out/log.txt", text("epoch 1\nepoch 2\n"));

  const Buf edited_big = random_bytes(1u << 20, 4);
  SyncOptions o;
  o.before_transfer = [&] {
    write_file(f.local / "out/big.bin", edited_big);
    write_file(f.local / "out/log.txt", text("my notes\n"));
  };
  SyncSummary s = f.pull({"out"}, o);
  BOOST_TEST(s.errors.empty());
  BOOST_REQUIRE_EQUAL(s.conflicts.size(), 2u);
  BOOST_TEST(s.files_sent == 0u);
  BOOST_TEST((read_bytes(f.local / "out/big.bin") == edited_big));
  BOOST_TEST((read_bytes(f.local / "out/log.txt") == text("my notes\n")));
  BOOST_TEST(temp_files(f.local) == 0u);

  // The manifest did not take the remote's version: the next pull still calls it a conflict.
  SyncSummary next = f.pull({"out"});
  BOOST_TEST(next.conflicts.size() == 2u);
  BOOST_TEST((read_bytes(f.local / "out/log.txt") == text("my notes\n")));
}

BOOST_AUTO_TEST_CASE(remote_symlinks_never_lead_a_pull_outside_the_root) {
  Fixture f;
  const fs::path outside = f.t / "outside";
  fs::create_directories(outside);
  // A remote link out of the root comes back as a link, not as what it points at.
  fs::create_symlink(outside, f.remote / "etc");
  // A remote directory whose name is a local symlink to outside: its files must not land there.
  write_file(f.remote / "y/passwd", text("root::0:0\n"));
  write_file(f.remote / "z/deep/er/passwd", text("root::0:0\n"));
  fs::create_symlink(outside, f.local / "y");
  fs::create_directories(f.local / "z");
  fs::create_symlink(outside, f.local / "z/deep");

  SyncSummary s = f.pull({""});
  BOOST_TEST(fs::is_symlink(f.local / "etc"));
  BOOST_TEST(fs::read_symlink(f.local / "etc") == outside);
  BOOST_TEST(fs::is_symlink(f.local / "y"));
  BOOST_TEST(fs::is_symlink(f.local / "z/deep"));
  BOOST_TEST(fs::is_empty(outside));
  BOOST_TEST(s.conflicts.size() == 2u);  // y and z/deep: a local link where the remote has a directory
  BOOST_TEST(s.errors.size() == 3u);     // y/passwd, z/deep/er, z/deep/er/passwd: refused

  // Asked for by name, the same.
  SyncSummary named = f.pull({"y/passwd"});
  BOOST_TEST(named.errors.size() == 1u);
  BOOST_TEST(fs::is_empty(outside));
}

BOOST_AUTO_TEST_CASE(a_bad_delta_from_the_agent_fails_that_file_cleanly) {
  for (auto damage : {CorruptingEndpoint::Damage::truncate, CorruptingEndpoint::Damage::flip_literal}) {
    Fixture f;
    const Buf mine = random_bytes(3u << 20, 5);
    f.in_sync("ckpt/a.pt", mine);
    f.in_sync("ckpt/b.txt", text("b1"));
    flip_byte(f.remote / "ckpt/a.pt", 2'000'000);
    write_file(f.remote / "ckpt/b.txt", text("b2"));
    CorruptingEndpoint bad(*f.ep, damage);
    SyncSummary s = f.pull({"ckpt"}, {}, &bad);
    BOOST_TEST(bad.corrupted == 1);
    BOOST_REQUIRE_EQUAL(s.errors.size(), 1u);
    BOOST_TEST(s.files_sent == 1u);  // b.txt only
    BOOST_TEST(s.errors[0].find("ckpt/a.pt") != std::string::npos);
    if (damage == CorruptingEndpoint::Damage::flip_literal) BOOST_TEST(s.errors[0].find("hash") != std::string::npos);
    BOOST_TEST((read_bytes(f.local / "ckpt/a.pt") == mine));
    BOOST_TEST((read_bytes(f.local / "ckpt/b.txt") == text("b2")));  // the rest of the pull went on
    BOOST_TEST(temp_files(f.local) == 0u);
    // The manifest still says the old version: an honest agent's delta now applies.
    SyncSummary good = f.pull({"ckpt"});
    BOOST_TEST(good.errors.empty());
    BOOST_TEST((read_bytes(f.local / "ckpt/a.pt") == read_bytes(f.remote / "ckpt/a.pt")));
  }
}

BOOST_AUTO_TEST_CASE(a_whole_file_pull_keeps_memory_bounded) {
  Fixture f;
  constexpr std::size_t kSize = 256u << 20;
  {
    // Random 1 MiB blocks, each made unique by its index: incompressible, cheap to make.
    Buf block = random_bytes(1u << 20, 6);
    std::ofstream out(f.remote / "ckpt.bin", std::ios::binary);
    for (std::uint64_t i = 0; i < kSize / block.size(); ++i) {
      std::memcpy(block.data(), &i, sizeof i);
      out.write(reinterpret_cast<const char*>(block.data()), static_cast<std::streamsize>(block.size()));
    }
  }
  {
    std::ofstream reset("/proc/self/clear_refs");
    reset << "5";  // resets VmHWM to the current RSS (Linux >= 4.0)
  }
  const std::uint64_t before = vm_hwm_kib();
  // The reset took: else the peak of earlier cases would hide this one's.
  BOOST_REQUIRE_LE(before, status_kib("VmRSS") + 4096);
  SyncSummary s = f.pull({"ckpt.bin"});
  const std::uint64_t peak = vm_hwm_kib();
  BOOST_TEST(s.errors.empty());
  BOOST_TEST(s.files_sent == 1u);
  BOOST_TEST_MESSAGE("whole-file pull of 256 MiB: peak RSS grew by " << (peak - before) / 1024 << " MiB");
  // Bounded by the chunks in flight, not the file: four 8 MiB chunks, each briefly held both
  // compressed and raw, replies waiting for their worker, the frame buffer (58-81 MiB measured
  // since replies are moved rather than copied and come faster; 43-58 before). The old pull held
  // the whole file (+256 MiB).
  BOOST_TEST((peak - before) * 1024 < kSize * 7 / 16);
  BOOST_TEST(fs::file_size(f.local / "ckpt.bin") == kSize);
  std::ifstream a(f.local / "ckpt.bin", std::ios::binary), b(f.remote / "ckpt.bin", std::ios::binary);
  std::vector<char> x(1u << 20), y(1u << 20);
  bool same = true;
  while (a.read(x.data(), static_cast<std::streamsize>(x.size())) && b.read(y.data(), static_cast<std::streamsize>(y.size())))
    same = same && x == y;
  BOOST_TEST(same);
}

// The box does not read a new checkpoint once just to hash it before its first byte moves: the
// listing leaves big files' hashes out, and only a file with a local copy is hashed, in one
// `only` listing, for the plan to compare. The pulled file is byte-exact and its hash recorded:
// the next pull finds it unchanged; a different local file of that name is a conflict.
BOOST_AUTO_TEST_CASE(a_new_big_file_is_pulled_without_hashing_it_on_the_box_first) {
  Fixture f;
  const Buf big = random_bytes(24u << 20, 21);
  write_file(f.remote / "out/ckpt.pt", big);
  write_file(f.remote / "out/log.txt", text("epoch 1\n"));
  ListSpy spy(*f.ep);
  SyncSummary s = f.pull({"out"}, {}, &spy);
  BOOST_TEST(s.errors.empty());
  BOOST_TEST(s.files_sent == 2u);
  BOOST_TEST((read_bytes(f.local / "out/ckpt.pt") == big));
  BOOST_TEST(spy.hashed.at("out/log.txt"));
  BOOST_TEST(!spy.hashed.at("out/ckpt.pt"));  // listed, not read
  BOOST_TEST(spy.only_paths.empty());         // nothing local to compare with

  SyncSummary again = f.pull({"out"}, {}, &spy);
  BOOST_TEST(again.errors.empty());
  BOOST_TEST(again.unchanged == 2u);
  BOOST_TEST(again.files_sent == 0u);
  BOOST_TEST((spy.only_paths == std::vector<std::string>{"out/ckpt.pt"}));  // hashed for the compare

  const Buf mine = random_bytes(24u << 20, 22);
  write_file(f.remote / "new/ckpt.pt", big);
  write_file(f.local / "new/ckpt.pt", mine);
  SyncSummary c = f.pull({"new"}, {}, &spy);
  BOOST_TEST(c.conflicts.size() == 1u);
  BOOST_TEST(c.files_sent == 0u);
  BOOST_TEST((read_bytes(f.local / "new/ckpt.pt") == mine));
  write_file(f.local / "new/ckpt.pt", big);  // the same bytes, never pulled: adopted, not sent
  SyncSummary same = f.pull({"new"}, {}, &spy);
  BOOST_TEST(same.unchanged == 1u);
  BOOST_TEST(same.files_sent == 0u);
}

// A Windows laptop (the flag Windows builds set, forced here): names Windows cannot hold and
// names that differ only in case are per-file errors naming the file and why, never written or
// renamed; the files beside them come as usual.
BOOST_AUTO_TEST_CASE(a_pull_to_windows_reports_names_it_cannot_hold_and_brings_the_rest) {
  Fixture f;
  for (const char* name : {"aux.py", "a:b", "x.", "Data.csv", "data.csv", "ok.py", "sub/nul/f.txt", "sub/fine.txt"})
    write_file(f.remote / name, text(std::string("remote ") + name + "\n"));
  SyncOptions windows;
  windows.windows_local_names = true;
  SyncSummary s = f.pull({""}, windows);
  BOOST_TEST(s.conflicts.empty());
  BOOST_TEST(s.files_sent == 2u);
  BOOST_TEST((read_bytes(f.local / "ok.py") == text("remote ok.py\n")));
  BOOST_TEST((read_bytes(f.local / "sub/fine.txt") == text("remote sub/fine.txt\n")));
  std::map<std::string, std::string> errors;  // the file each error names -> the error
  for (const auto& e : s.errors) {
    BOOST_REQUIRE(e.starts_with("pull '"));
    errors[e.substr(6, e.find('\'', 6) - 6)] = e;
  }
  BOOST_TEST(errors.size() == s.errors.size());
  for (const char* name : {"aux.py", "a:b", "x.", "Data.csv", "data.csv", "sub/nul", "sub/nul/f.txt"}) {
    BOOST_TEST(errors.contains(name), name);
    BOOST_TEST(!fs::exists(f.local / name), name);
  }
  BOOST_TEST(s.errors.size() == 7u);
  BOOST_TEST(errors["aux.py"] ==
             "pull 'aux.py': not written: 'aux.py': AUX is a device name on Windows (with any extension too); ferry does not rename files");
  BOOST_TEST(errors["a:b"].find("Windows does not allow ':' in a name") != std::string::npos);
  BOOST_TEST(errors["x."].find("trailing dot") != std::string::npos);
  BOOST_TEST(errors["data.csv"].find("'Data.csv' and 'data.csv' differ only in case") != std::string::npos);
  BOOST_TEST(errors["sub/nul/f.txt"].find("in 'sub/nul': 'nul': NUL is a device name") != std::string::npos);
  BOOST_TEST(temp_files(f.local) == 0u);

  // Nothing was recorded for them: the next pull says the same, and moves nothing.
  SyncSummary again = f.pull({""}, windows);
  BOOST_TEST(again.errors.size() == 7u);
  BOOST_TEST(again.files_sent == 0u);
  BOOST_TEST(again.unchanged == 2u);
  // One of the two spellings asked for alone clashes with nothing in that pull: it comes.
  SyncSummary one = f.pull({"data.csv"}, windows);
  BOOST_TEST(one.errors.empty());
  BOOST_TEST((read_bytes(f.local / "data.csv") == text("remote data.csv\n")));
  // Without the flag (a Linux or macOS laptop's default here) every name comes.
  SyncSummary posix = f.pull({""});
  BOOST_TEST(posix.errors.empty());
  BOOST_TEST((read_bytes(f.local / "a:b") == text("remote a:b\n")));
  BOOST_TEST((read_bytes(f.local / "sub/nul/f.txt") == text("remote sub/nul/f.txt\n")));
}
