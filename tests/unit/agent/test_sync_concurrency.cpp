// The ferry-agent binary with sync writes pipelined the way no waiting helper would send them:
// several writeBatches and out-of-order fileAppends of one upload in flight at once, its
// fileCommit sent right behind its appends (before any of them is answered), and a listing
// last. Every request is answered once, by id; the commit sees every chunk; the tree holds
// exactly the bytes sent. Run with the agent's workers and without (FERRY_AGENT_WORKERS=0).
#define BOOST_TEST_MODULE sync_concurrency
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <zstd.h>

#include "protocol/agent_wire.hpp"
#include "protocol/delta/delta_types.hpp"
#include "common/unique_fd.hpp"
#include "tests/support/raw_agent.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;
using namespace ferry::protocol;
using namespace std::chrono_literals;

namespace {

// The agent binary on pipes (tests/support/raw_agent.hpp), with FERRY_AGENT_WORKERS set for it.
struct Agent {
  std::optional<ferry::test::RawAgent> raw;

  Agent(const fs::path& root, const std::string& workers) {
    ::setenv("FERRY_AGENT_WORKERS", workers.c_str(), 1);
    raw.emplace(std::vector<std::string>{FERRY_AGENT_PATH, "--root", root.string()});
    ::unsetenv("FERRY_AGENT_WORKERS");
  }
  void send(const Request& r) { raw->send(r); }
  Response next() {
    auto m = raw->next();
    BOOST_REQUIRE(std::holds_alternative<Response>(m));
    return std::get<Response>(m);
  }
};

json::binary_t packed(const std::string& bytes) {
  std::vector<std::uint8_t> out(ZSTD_compressBound(bytes.size()));
  out.resize(ZSTD_compress(out.data(), out.size(), bytes.data(), bytes.size(), 1));
  return json::binary_t(std::move(out));
}
json::binary_t hash_of(const std::string& bytes) {
  auto h = ferry::delta::hash128(ferry::delta::Bytes(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
  return json::binary_t(std::vector<std::uint8_t>(h.begin(), h.end()));
}
std::string random_text(std::mt19937_64& rng, std::size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>('a' + rng() % 26);
  return s;
}

void pipelined_writes_land_exactly(const std::string& workers) {
  ferry::test::TempDir tmp;
  const fs::path root = tmp.path() / "root";
  Agent agent(root, workers);
  std::mt19937_64 rng(7);

  // The big file: begun and answered first (its handle is needed), then everything else at once.
  constexpr std::size_t kChunk = 1u << 20, kChunks = 6;
  const std::string big = random_text(rng, kChunk * kChunks - 123);
  agent.send(Request{1, "sync/fileBegin", json{{"path", "big.bin"}, {"size", big.size()}, {"hash", hash_of(big)},
                                               {"mode", 0644}, {"mtimeNs", 1'000'000'000}}});
  Response begun = agent.next();
  BOOST_REQUIRE(begun.ok());
  const json handle = std::get<json>(begun.outcome)["handle"];

  std::map<std::string, std::string> small;
  std::map<std::int64_t, std::string> expect_reply;  // id -> method
  std::int64_t id = 10;
  auto batch = [&](int b) {
    json files = json::array();
    for (int i = 0; i < 40; ++i) {
      std::string path = "d";  // appended: gcc 12's -Wrestrict false positive on "d" + std::string
      path.append(std::to_string(b)).append("/f").append(std::to_string(i)).append(".txt");
      const std::string bytes = random_text(rng, 1 + rng() % 5000);
      small[path] = bytes;
      files.push_back({{"path", path}, {"size", bytes.size()}, {"hash", hash_of(bytes)}, {"mode", 0644},
                       {"mtimeNs", 2'000'000'000}, {"data", packed(bytes)}});
    }
    expect_reply[id] = "sync/writeBatch";
    agent.send(Request{id++, "sync/writeBatch", json{{"files", std::move(files)}}});
  };
  // Chunks last to first, batches between them, the commit right behind the last chunk.
  for (std::size_t c = kChunks; c-- > 0;) {
    const std::size_t off = c * kChunk, n = std::min(kChunk, big.size() - off);
    const std::string piece = big.substr(off, n);
    expect_reply[id] = "sync/fileAppend";
    // Every other chunk stored (its raw bytes, as a chunk that does not compress goes).
    json append{{"handle", handle}, {"offset", off}, {"rawSize", n}, {"data", packed(piece)}};
    if (c % 2) {
      append["data"] = json::binary_t(std::vector<std::uint8_t>(piece.begin(), piece.end()));
      append["stored"] = true;
    }
    agent.send(Request{id++, "sync/fileAppend", std::move(append)});
    if (c % 2 == 0) batch(static_cast<int>(c));
  }
  const std::int64_t commit_id = id;
  expect_reply[id] = "sync/fileCommit";
  agent.send(Request{id++, "sync/fileCommit", json{{"handle", handle}}});
  const std::int64_t list_id = id;
  expect_reply[id] = "sync/list";
  agent.send(Request{id++, "sync/list", json{{"known", json::array()}}});

  std::vector<std::int64_t> order;
  json listing;
  while (order.size() < expect_reply.size()) {
    Response r = agent.next();
    BOOST_REQUIRE(r.id.is_number_integer());
    const std::int64_t rid = r.id.get<std::int64_t>();
    BOOST_REQUIRE_MESSAGE(expect_reply.contains(rid), "reply to an unknown id " << rid);
    BOOST_TEST((std::find(order.begin(), order.end(), rid) == order.end()), "id " << rid << " answered twice");
    order.push_back(rid);
    const std::string why = r.ok() ? "" : std::get<ResponseError>(r.outcome).message;
    BOOST_REQUIRE_MESSAGE(r.ok(), expect_reply[rid] << " " << rid << ": " << why);
    const json& result = std::get<json>(r.outcome);
    if (expect_reply[rid] == "sync/writeBatch")
      for (const auto& f : result["results"]) BOOST_TEST(f["ok"].get<bool>(), f.dump());
    if (rid == list_id) listing = result;
  }
  // The listing waits for every write before it, so it sees all of them.
  BOOST_TEST(order.back() == list_id);
  BOOST_TEST((std::find(order.begin(), order.end(), commit_id) != order.end()));
  std::size_t listed_files = 0;
  for (const auto& row : listing["entries"]) listed_files += row[1] == 0 && !row[0].get<std::string>().starts_with(".ferry/");
  BOOST_TEST(listed_files == small.size() + 1);

  BOOST_TEST(ferry::test::read_file(root / "big.bin") == big);
  for (const auto& [path, bytes] : small) BOOST_TEST(ferry::test::read_file(root / path) == bytes, path);
  // No temp file left behind.
  for (const auto& e : fs::recursive_directory_iterator(root))
    BOOST_TEST(e.path().filename().string().find(".ferry-tmp.") == std::string::npos, e.path());

  agent.raw->stream->close_write();
  auto status = agent.raw->child.wait_for(10s);
  BOOST_REQUIRE(status.has_value());
  BOOST_TEST(WEXITSTATUS(*status) == 0);
}

}  // namespace

BOOST_AUTO_TEST_CASE(pipelined_sync_writes_on_workers) { pipelined_writes_land_exactly("3"); }
BOOST_AUTO_TEST_CASE(pipelined_sync_writes_on_the_reader_thread) { pipelined_writes_land_exactly("0"); }

// Another agent's write still running (its helper's link dropped mid-push, say) holds the base's
// write gate; a push's first look at the tree (sync/state, sync/list) waits for it, so the write
// lands before the look and not between the look and the push's plan.
// A stored chunk must be exactly rawSize bytes: one that is not is refused, nothing lands.
BOOST_AUTO_TEST_CASE(a_stored_chunk_of_the_wrong_length_is_refused) {
  ferry::test::TempDir tmp;
  const fs::path root = tmp.path() / "root";
  Agent agent(root, "3");
  const std::string bytes(1000, 'x');
  agent.send(Request{1, "sync/fileBegin", json{{"path", "f.bin"}, {"size", bytes.size()}, {"hash", hash_of(bytes)},
                                               {"mode", 0644}, {"mtimeNs", 1'000'000'000}}});
  Response begun = agent.next();
  BOOST_REQUIRE(begun.ok());
  const json handle = std::get<json>(begun.outcome)["handle"];
  agent.send(Request{2, "sync/fileAppend", json{{"handle", handle}, {"offset", 0}, {"rawSize", bytes.size()}, {"stored", true},
                                                {"data", json::binary_t(std::vector<std::uint8_t>(999, 'x'))}}});
  Response refused = agent.next();
  BOOST_REQUIRE(!refused.ok());
  const std::string why = std::get<ResponseError>(refused.outcome).message;
  BOOST_TEST(why.find("999 stored bytes, 1000 declared") != std::string::npos, why);
  BOOST_TEST(!fs::exists(root / "f.bin"));
  agent.raw->stream->close_write();
  BOOST_TEST(agent.raw->child.wait_for(10s).has_value());
}

BOOST_AUTO_TEST_CASE(a_push_looks_at_the_tree_only_once_other_writes_are_done) {
  ferry::test::TempDir tmp;
  const fs::path root = tmp.path() / "root";
  Agent agent(root, "3");
  const std::string bytes = "print('hi')\n";
  agent.send(Request{1, "sync/writeBatch", json{{"files", json::array({json{{"path", "a.py"}, {"size", bytes.size()}, {"hash", hash_of(bytes)},
                                                                         {"mode", 0644}, {"mtimeNs", 1}, {"data", packed(bytes)}}})}}});
  BOOST_REQUIRE(agent.next().ok());
  BOOST_REQUIRE(fs::exists(root / ".ferry" / "writing"));  // the gate that write held

  for (const std::string method : {"sync/state", "sync/list"}) {
    ferry::posix::UniqueFd other(::open((root / ".ferry" / "writing").c_str(), O_RDONLY | O_CLOEXEC));
    BOOST_REQUIRE(::flock(other.get(), LOCK_SH) == 0);  // as a running write of another agent holds it
    agent.send(Request{2, method, json::object()});
    BOOST_CHECK_THROW(agent.raw->next(1s), std::runtime_error);  // no answer while the write runs
    other.reset();
    Response r = agent.next();
    BOOST_TEST(r.ok(), method);
  }
}
