// ferry-train installs itself on a box (the sshd fixture; this machine's Debian LibTorch): the
// first `ferry train` builds it there, two helpers at once build it once, the next train reuses
// it with no build, other sources rebuild it, and a box without a compiler gets one clear line.
// The build is shared by these tests through FERRY_TRAIN_CACHE (ctest fixture trainer_box), so
// a CI run builds the trainer once (plus the one rebuild the rebuild test is about). A box whose
// compiler is g++ 11 builds it too (fixture trainer_gxx11, its own cache kept between runs).
#define BOOST_TEST_MODULE trainer_install
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "helper/train/trainer_pack.hpp"
#include "tests/integration/sshd_fixture.hpp"
#include "tests/support/serve_client.hpp"
#include "tests/support/spawned_process.hpp"
#include "tests/support/temp_dir.hpp"

using ferry::test::SshdFixture;
using nlohmann::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

const fs::path kCache = FERRY_TRAINER_BOX_CACHE;

int status_of(std::optional<int> st) {
  BOOST_TEST_REQUIRE(st.has_value());
  return WIFEXITED(*st) ? WEXITSTATUS(*st) : 128 + WTERMSIG(*st);
}

int builds_logged(const fs::path& cache) {
  std::ifstream in(cache / "builds.log");
  int n = 0;
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

// A project whose box is `sshd`, with the trainer cache at `cache` and `env` on top.
void write_project(const fs::path& dir, const SshdFixture& sshd, const fs::path& cache, json env = json::object()) {
  env["FERRY_TRAIN_CACHE"] = cache.string();
  // The box's compiler cache is the test machine's: a CI run's second build (other sources)
  // compiles only what changed.
  const char* ccache_dir = std::getenv("CCACHE_DIR");
  const char* home = std::getenv("HOME");
  if (!env.contains("CCACHE_DIR")) env["CCACHE_DIR"] = ccache_dir ? std::string(ccache_dir) : std::string(home ? home : "/root") + "/.cache/ccache";
  ferry::test::write_file(dir / "ferry.json", json{{"name", "trainer-install"},
                                                   {"host", sshd.alias()},
                                                   {"sshConfig", sshd.ssh_config().string()},
                                                   {"interpreter", "/usr/bin/python3"},
                                                   {"env", env},
                                                   {"mappings", {{{"local", "."}, {"remote", "~/proj"}}}}}
                                                  .dump());
  json config = {{"model", {{"kind", "mlp"}, {"input_dim", 8}, {"hidden", {16}}, {"output_dim", 2}}},
                 {"data", {{"source", "synthetic"}, {"task", "classification"}, {"samples", 128}, {"workers", 0}}},
                 {"optimizer", {{"kind", "sgd"}, {"lr", 0.05}}},
                 {"batch_size", 16},
                 {"max_steps", 6},
                 {"log_every_steps", 3},
                 {"threads", 1},
                 {"device", "cpu"},
                 {"output_dir", "out"}};
  ferry::test::write_file(dir / "tiny.json", config.dump());
}

struct TrainOutcome {
  int status = -1;
  std::vector<std::string> build_stages;  // trainer_build events' stages, in order
  int build_total = 0;
  int build_done = 0;  // the most build steps (Ninja) or units (Make) seen done
  bool done = false;
  std::string text;  // everything, for messages
};

// `ferry train tiny.json --json` with its stderr merged into the lines read.
ferry::test::SpawnedProcess start_train(const fs::path& dir, std::vector<std::pair<std::string, std::string>> env = {}) {
  return ferry::test::SpawnedProcess({"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>&1", FERRY_BIN, "train", "tiny.json", "--json"},
                                     dir.string(), env);
}

TrainOutcome finish_train(ferry::test::SpawnedProcess& p) {
  TrainOutcome out;
  while (auto line = p.read_line(1500s)) {
    out.text += *line + "\n";
    auto j = json::parse(*line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("event")) continue;
    if (j["event"] == "trainer_build") {
      out.build_stages.push_back(j.value("stage", ""));
      out.build_total = std::max(out.build_total, j.value("total", 0));
      out.build_done = std::max(out.build_done, j.value("done", 0));
    }
    if (j["event"] == "done") out.done = true;
  }
  out.status = status_of(p.wait(60s));
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// The trainer's pack with main.cpp changed by a comment line: a stale trainer for the cache,
// rebuilt in 2 Ninja steps. The projects that build it turn the box's ccache off
// (kNoCompilerCache: a comment preprocesses away, so ccache would answer at once), so the
// build really compiles, for seconds, while the tests look at what ran meanwhile.
fs::path changed_pack(const fs::path& work, const std::string& tag) {
  const fs::path src = work / ("src-" + tag);
  fs::create_directories(src);
  ferry::test::run_command("tar xzf " + std::string(FERRY_TRAIN_PACK_FILE) + " -C " + src.string());
  {
    std::ofstream main(src / "remote-runtime" / "train" / "main.cpp", std::ios::app);
    main << "// " << tag << " " << std::chrono::system_clock::now().time_since_epoch().count() << " " << ::getpid() << "\n";
  }
  const fs::path pack = work / (tag + ".tar.gz");
  ferry::test::run_command("cd " + src.string() + " && tar cf - * | gzip -n > " + pack.string());
  return pack;
}

const json kNoCompilerCache = {{"CCACHE_DISABLE", "1"}};

// The g++ 11 box's trainer cache: outside the build tree, so a CI run (or another build tree) after
// no change to the trainer's sources builds nothing, and one after a change rebuilds what changed.
fs::path gxx11_cache() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path root = xdg && *xdg ? fs::path(xdg) : fs::path(home ? home : "/root") / ".cache";
  return root / "ferry" / "test-trainer-gxx11";
}

// The "GCC: (...) VERSION" notes GCC leaves in each object's .comment section, as found in `file`.
std::vector<std::string> gcc_notes(const fs::path& file) {
  const std::string bytes = ferry::test::read_file(file);
  std::vector<std::string> notes;
  for (auto at = bytes.find("GCC: ("); at != std::string::npos; at = bytes.find("GCC: (", at + 1))
    notes.push_back(bytes.substr(at, bytes.find('\0', at) - at));
  return notes;
}

// The compiler CMake configured the box's build with (build.sh's work-<torch>[-ninja] folder).
std::string configured_compiler(const fs::path& cache) {
  for (const auto& e : fs::directory_iterator(cache)) {
    if (e.path().filename().string().rfind("work-", 0) != 0) continue;
    std::ifstream in(e.path() / "CMakeCache.txt");
    for (std::string line; std::getline(in, line);)
      if (line.rfind("CMAKE_CXX_COMPILER:", 0) == 0) return line.substr(line.find('=') + 1);
  }
  return "";
}

// Keeps the cache from growing by one trainer per change of its sources: the newest few stay.
void prune_old_trainers(const fs::path& cache, const fs::path& keep) {
  std::vector<fs::path> built;
  for (const auto& e : fs::directory_iterator(cache))
    if (e.path() != keep && fs::is_regular_file(e.path() / "ferry-train")) built.push_back(e.path());
  std::sort(built.begin(), built.end(), [](const fs::path& a, const fs::path& b) {
    return fs::last_write_time(a) > fs::last_write_time(b);
  });
  for (std::size_t i = 3; i < built.size(); ++i) {
    const std::string key = built[i].filename().string().substr(0, 16);
    fs::remove_all(built[i]);
    fs::remove(cache / "packs" / (key + ".tar.gz"));
  }
}

std::string read_all(ferry::test::SpawnedProcess& p, std::chrono::seconds limit) {
  std::string out;
  while (auto line = p.read_line(limit)) out += *line + "\n";
  return out;
}

}  // namespace

// ctest: FIXTURES_SETUP trainer_box. A fresh cache; two projects train at once.
BOOST_AUTO_TEST_CASE(first_train_builds_the_trainer_once_for_two_helpers) {
  fs::remove_all(kCache);
  SshdFixture sshd;
  sshd.trust_host_key();
  ferry::test::TempDir a("ferry-trainer-a"), b("ferry-trainer-b");
  write_project(a.path(), sshd, kCache);
  write_project(b.path(), sshd, kCache);
  auto pa = start_train(a.path());
  auto pb = start_train(b.path());
  auto ra = finish_train(pa);
  auto rb = finish_train(pb);
  BOOST_TEST_INFO(ra.text);
  BOOST_TEST(ra.status == 0);
  BOOST_TEST_INFO(rb.text);
  BOOST_TEST(rb.status == 0);
  BOOST_TEST(ra.done);
  BOOST_TEST(rb.done);
  // One build ran (build.sh logs each one): one helper compiled, streaming its steps; the other
  // waited on the box's lock and found the result (or, starting late, found it at once).
  BOOST_TEST(builds_logged(kCache) == 1);
  const bool a_compiled = contains(ra.build_stages, "compile"), b_compiled = contains(rb.build_stages, "compile");
  BOOST_TEST(a_compiled != b_compiled);
  const TrainOutcome& builder = a_compiled ? ra : rb;
  const TrainOutcome& waiter = a_compiled ? rb : ra;
  BOOST_TEST(builder.build_total > 20);
  BOOST_TEST(contains(builder.build_stages, "ready"));
  BOOST_TEST((waiter.build_stages.empty() || (contains(waiter.build_stages, "waiting") && contains(waiter.build_stages, "ready"))));
  // It trained on the box with the cached trainer; the outputs came back.
  BOOST_TEST(fs::is_regular_file(a.path() / "out" / "plot.svg"));
  int trainers = 0;
  for (const auto& e : fs::directory_iterator(kCache))
    if (fs::is_regular_file(e.path() / "ferry-train")) ++trainers;
  BOOST_TEST(trainers == 1);
}

// ctest: FIXTURES_REQUIRED trainer_box. A new box session (fresh home), the same cache.
BOOST_AUTO_TEST_CASE(second_train_reuses_the_trainer_without_building) {
  BOOST_TEST_REQUIRE(builds_logged(kCache) >= 1, "the trainer_box fixture built no trainer");
  const int before = builds_logged(kCache);
  SshdFixture sshd;
  sshd.trust_host_key();
  ferry::test::TempDir dir("ferry-trainer-reuse");
  write_project(dir.path(), sshd, kCache);
  auto p = start_train(dir.path());
  auto r = finish_train(p);
  BOOST_TEST_INFO(r.text);
  BOOST_TEST(r.status == 0);
  BOOST_TEST(r.done);
  BOOST_TEST(r.build_stages.empty());  // no upload, no build, not even a progress line
  BOOST_TEST(builds_logged(kCache) == before);
  BOOST_TEST(r.text.find(kCache.string()) != std::string::npos);  // "run N: <cache>/<key>-<torch>/ferry-train ..."
}

// ctest: FIXTURES_REQUIRED trainer_box. Other sources (one file changed): another key, a build of
// what changed only.
BOOST_AUTO_TEST_CASE(changed_sources_rebuild_the_trainer) {
  BOOST_TEST_REQUIRE(builds_logged(kCache) >= 1, "the trainer_box fixture built no trainer");
  const int before = builds_logged(kCache);
  ferry::test::TempDir work("ferry-trainer-pack");
  const fs::path src = work / "src";
  fs::create_directories(src);
  ferry::test::run_command("tar xzf " + std::string(FERRY_TRAIN_PACK_FILE) + " -C " + src.string());
  {
    std::ofstream main(src / "remote-runtime" / "train" / "main.cpp", std::ios::app);
    main << "// changed by test_trainer_install\n";
  }
  const fs::path pack = work / "other.tar.gz";
  ferry::test::run_command("cd " + src.string() + " && tar cf - * | gzip -n > " + pack.string());

  SshdFixture sshd;
  sshd.trust_host_key();
  ferry::test::TempDir dir("ferry-trainer-rebuild");
  write_project(dir.path(), sshd, kCache);
  auto p = start_train(dir.path(), {{"FERRY_TRAIN_PACK", pack.string()}});
  auto r = finish_train(p);
  BOOST_TEST_INFO(r.text);
  BOOST_TEST(r.status == 0);
  BOOST_TEST(r.done);
  BOOST_TEST(contains(r.build_stages, "compile"));
  BOOST_TEST(builds_logged(kCache) == before + 1);
  // Incremental: the box kept the sources whose content did not change, so only main.cpp is
  // compiled again and the trainer relinked (a few steps, not the first build's 29).
  BOOST_TEST(r.build_done >= 1);
  BOOST_TEST(r.build_done <= 4);
}

// ctest: FIXTURES_REQUIRED trainer_box. `ferry connect --build-trainer` prepares the box ahead of
// the first train: here it finds the cached trainer and builds nothing.
BOOST_AUTO_TEST_CASE(connect_build_trainer_reports_the_cached_trainer) {
  BOOST_TEST_REQUIRE(builds_logged(kCache) >= 1, "the trainer_box fixture built no trainer");
  const int before = builds_logged(kCache);
  SshdFixture sshd;
  sshd.trust_host_key();
  ferry::test::TempDir dir("ferry-trainer-connect");
  write_project(dir.path(), sshd, kCache);
  ferry::test::SpawnedProcess connect({FERRY_BIN, "connect", "--build-trainer", "--json"}, dir.path().string());
  std::string out;
  while (auto line = connect.read_line(120s)) out += *line + "\n";
  BOOST_TEST_INFO(out);
  BOOST_TEST_REQUIRE(status_of(connect.wait(60s)) == 0);
  auto j = json::parse(out, nullptr, false);
  BOOST_TEST_REQUIRE(j.is_object());
  BOOST_TEST(j["trainer"]["built"] == false);
  BOOST_TEST(j["trainer"]["path"].get<std::string>().starts_with(kCache.string()));
  BOOST_TEST(j["trainer"]["version"].get<std::string>().find("distributed: c10d gloo") != std::string::npos);
  BOOST_TEST(builds_logged(kCache) == before);

  // ferry doctor's last check is the trainer: built, for which torch, CPU, which backends.
  ferry::test::SpawnedProcess doctor({FERRY_BIN, "doctor", "--json"}, dir.path().string());
  std::string report;
  while (auto line = doctor.read_line(120s)) report += *line + "\n";
  doctor.wait(60s);
  auto d = json::parse(report, nullptr, false);
  BOOST_TEST_INFO(report);
  BOOST_TEST_REQUIRE(d.is_object());
  json trainer_check;
  for (const auto& c : d["checks"])
    if (c.value("check", "") == "ferry-train") trainer_check = c;
  BOOST_TEST_REQUIRE(trainer_check.is_object(), report);
  BOOST_TEST(trainer_check.value("status", "") == "pass");
  BOOST_TEST(trainer_check.value("detail", "").find("LibTorch 1.13.0, CUDA: no, distributed: c10d gloo") != std::string::npos);
}

// A box whose PATH has no compiler: one line saying so and how to fix it, exit 255, nothing
// uploaded.
BOOST_AUTO_TEST_CASE(a_box_without_a_compiler_gets_one_clear_line) {
  SshdFixture sshd;
  sshd.trust_host_key();
  ferry::test::TempDir dir("ferry-trainer-nocxx");
  const fs::path bin = dir / "box-bin";  // what a box without build tools has
  fs::create_directories(bin);
  for (const char* tool : {"sh", "sed", "head", "cat", "dirname", "mkdir", "rm", "mv", "tar", "gzip", "sha256sum", "cut", "ls"}) {
    const std::string found = ferry::test::run_command(std::string("command -v ") + tool);
    fs::create_symlink(found.substr(0, found.find('\n')), bin / tool);
  }
  const fs::path cache = dir / "cache";
  write_project(dir.path(), sshd, cache, json{{"PATH", bin.string()}});
  auto p = start_train(dir.path());
  auto r = finish_train(p);
  BOOST_TEST_INFO(r.text);
  BOOST_TEST(r.status == 255);
  BOOST_TEST(r.text.find("cannot build ferry-train on") != std::string::npos);
  BOOST_TEST(r.text.find("no C++ compiler on the box") != std::string::npos);
  BOOST_TEST(r.text.find("apt install g++") != std::string::npos);
  BOOST_TEST(!fs::exists(cache / "packs"));
  BOOST_TEST(!r.done);
}

// ctest: FIXTURES_REQUIRED trainer_box. A plain `ferry connect` of a training project whose
// trainer is stale starts the build on the box and returns without waiting for it; the next
// `ferry train` waits on the box's lock and uses that build (one build in all).
BOOST_AUTO_TEST_CASE(connect_starts_a_stale_trainers_build_in_the_background) {
  BOOST_TEST_REQUIRE(builds_logged(kCache) >= 1, "the trainer_box fixture built no trainer");
  const int before = builds_logged(kCache);
  ferry::test::TempDir work("ferry-trainer-bg");
  const fs::path pack = changed_pack(work.path(), "connect-bg");
  SshdFixture sshd;
  sshd.trust_host_key();
  ferry::test::TempDir dir("ferry-trainer-bg-project");
  write_project(dir.path(), sshd, kCache, kNoCompilerCache);
  ferry::test::SpawnedProcess connect({FERRY_BIN, "connect", "--json"}, dir.path().string(), {{"FERRY_TRAIN_PACK", pack.string()}});
  const std::string out = read_all(connect, 120s);
  BOOST_TEST_INFO(out);
  BOOST_TEST_REQUIRE(status_of(connect.wait(60s)) == 0);
  // Returned while the build runs: it has not finished (compiling main.cpp alone takes seconds).
  BOOST_TEST(builds_logged(kCache) == before);
  auto j = json::parse(out, nullptr, false);
  BOOST_TEST_REQUIRE(j.is_object());
  BOOST_TEST(j["trainer"]["building"] == true);
  const std::string log = j["trainer"].value("log", "");
  BOOST_TEST(log.starts_with((kCache / "logs").string()));
  BOOST_TEST(fs::exists(log));

  auto p = start_train(dir.path(), {{"FERRY_TRAIN_PACK", pack.string()}});
  auto r = finish_train(p);
  BOOST_TEST_INFO(r.text);
  BOOST_TEST(r.status == 0);
  BOOST_TEST(r.done);
  BOOST_TEST(!contains(r.build_stages, "compile"));  // it waited for the connect's build
  // Waiting (rather than finding it done), it named the log of the build it waited for.
  if (contains(r.build_stages, "waiting")) BOOST_TEST(r.text.find("its log: " + log) != std::string::npos);
  BOOST_TEST(builds_logged(kCache) == before + 1);
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BOOST_TEST(text.find("ferry-box: ended 0") != std::string::npos, text);

  // The human form says so in one line, and --no-build-trainer probes nothing.
  ferry::test::SpawnedProcess human({FERRY_BIN, "connect"}, dir.path().string(), {{"FERRY_TRAIN_PACK", pack.string()}});
  const std::string said = read_all(human, 120s);
  BOOST_TEST(status_of(human.wait(60s)) == 0);
  BOOST_TEST(said.find("  trainer   " + kCache.string()) != std::string::npos, said);
  BOOST_TEST(said.find("(ready)") != std::string::npos, said);
  ferry::test::SpawnedProcess quiet({FERRY_BIN, "connect", "--no-build-trainer"}, dir.path().string());
  const std::string none = read_all(quiet, 120s);
  BOOST_TEST(status_of(quiet.wait(60s)) == 0);
  BOOST_TEST(none.find("  trainer   ") == std::string::npos, none);
}

// A project with no training config and no train launch entry: connect probes no trainer and
// starts no build (its cache on the box is never made).
BOOST_AUTO_TEST_CASE(connect_of_a_project_without_training_starts_no_build) {
  SshdFixture sshd;
  sshd.trust_host_key();
  ferry::test::TempDir dir("ferry-trainer-none");
  const fs::path cache = dir / "cache";
  write_project(dir.path(), sshd, cache);
  fs::remove(dir / "tiny.json");
  ferry::test::write_file(dir / "data.json", R"({"rows": [1, 2, 3]})");
  ferry::test::SpawnedProcess connect({FERRY_BIN, "connect", "--json"}, dir.path().string());
  const std::string out = read_all(connect, 120s);
  BOOST_TEST_INFO(out);
  BOOST_TEST_REQUIRE(status_of(connect.wait(60s)) == 0);
  auto j = json::parse(out, nullptr, false);
  BOOST_TEST_REQUIRE(j.is_object());
  BOOST_TEST(!j.contains("trainer"));
  BOOST_TEST(!j.contains("trainerError"));
  BOOST_TEST(!fs::exists(cache));
}

namespace {

json progress_capabilities() {
  json c = ferry::test::ServeClient::ferry_capabilities();
  c["window"] = {{"workDoneProgress", true}};
  return c;
}

json answer_create(const json& request) {
  if (request.value("method", "") == "window/workDoneProgress/create") return json{{"result", nullptr}};
  return json{{"error", {{"code", -32601}, {"message", "not answered by this test"}}}};
}

bool progress_kind(const json& n, const std::string& kind) {
  return n.value("method", "") == "$/progress" && n["params"]["value"].value("kind", "") == kind;
}

}  // namespace

// ctest: FIXTURES_REQUIRED trainer_box. ferry serve's connect of a training project with a stale
// trainer answers at once and reports the background build as $/progress (begin ... end) on a
// token it created; the link serves other requests meanwhile.
BOOST_AUTO_TEST_CASE(serve_connect_reports_the_background_build_as_progress) {
  BOOST_TEST_REQUIRE(builds_logged(kCache) >= 1, "the trainer_box fixture built no trainer");
  const int before = builds_logged(kCache);
  ferry::test::TempDir work("ferry-trainer-serve");
  ::setenv("FERRY_TRAIN_PACK", changed_pack(work.path(), "serve-bg").c_str(), 1);
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
  ::unsetenv("SSH_AUTH_SOCK");
  SshdFixture sshd;
  sshd.trust_host_key();
  ferry::test::TempDir dir("ferry-trainer-serve-project");
  write_project(dir.path(), sshd, kCache, kNoCompilerCache);
  {
    ferry::test::ServeClient c(dir.path(), progress_capabilities());
    auto connected = c.call("host/connect", json::object(), answer_create, 120s);
    BOOST_TEST_REQUIRE(connected.contains("result"), connected.dump());
    // Answered with the build still to come or running: no end of it yet, no build logged.
    for (const auto& n : c.notifications) BOOST_TEST(!progress_kind(n, "end"), n.dump());
    BOOST_TEST(builds_logged(kCache) == before);
    auto begin = c.wait_notification([](const json& n) { return progress_kind(n, "begin"); }, 120s, answer_create);
    BOOST_TEST_REQUIRE(begin.has_value());
    BOOST_TEST(begin->dump().find("Building ferry-train on") != std::string::npos, begin->dump());
    auto list = c.call("run/list", json::object(), answer_create, 60s);  // the link is usable meanwhile
    BOOST_TEST(list.contains("result"), list.dump());
    auto end = c.wait_notification([](const json& n) { return progress_kind(n, "end"); }, 900s, answer_create);
    BOOST_TEST_REQUIRE(end.has_value());
    BOOST_TEST(end->dump().find("ferry-train built") != std::string::npos, end->dump());
    BOOST_TEST(end->at("params")["token"] == begin->at("params")["token"]);
    bool created = false;
    for (const auto& r : c.server_requests) created = created || r.value("method", "") == "window/workDoneProgress/create";
    BOOST_TEST(created);
  }
  ::unsetenv("FERRY_TRAIN_PACK");
  BOOST_TEST(builds_logged(kCache) == before + 1);
}

// ctest: FIXTURES_REQUIRED trainer_box. train/start with a workDoneToken on a box whose trainer is
// stale: the build (its own, or the connect's it waits for) comes as $/progress on that token,
// begin ... end, before the training's answer; then it trains.
BOOST_AUTO_TEST_CASE(train_start_sends_the_trainer_build_as_progress) {
  BOOST_TEST_REQUIRE(builds_logged(kCache) >= 1, "the trainer_box fixture built no trainer");
  const int before = builds_logged(kCache);
  ferry::test::TempDir work("ferry-trainer-start");
  ::setenv("FERRY_TRAIN_PACK", changed_pack(work.path(), "train-start").c_str(), 1);
  ::setenv("FERRY_AGENT", FERRY_AGENT_PATH, 1);
  ::unsetenv("SSH_AUTH_SOCK");
  SshdFixture sshd;
  sshd.trust_host_key();
  ferry::test::TempDir dir("ferry-trainer-start-project");
  write_project(dir.path(), sshd, kCache, kNoCompilerCache);
  {
    ferry::test::ServeClient c(dir.path(), progress_capabilities());
    const int id = c.request("train/start", {{"config", "tiny.json"}, {"workDoneToken", "build"}});
    auto is = [](const std::string& kind) {
      return [kind](const json& n) { return progress_kind(n, kind) && n["params"]["token"] == "build"; };
    };
    auto begin = c.wait_notification(is("begin"), 300s, answer_create);
    BOOST_TEST_REQUIRE(begin.has_value());
    BOOST_TEST(begin->dump().find("Building ferry-train on the box") != std::string::npos, begin->dump());
    auto end = c.wait_notification(is("end"), 900s, answer_create);
    BOOST_TEST_REQUIRE(end.has_value());
    BOOST_TEST(end->dump().find("ferry-train built") != std::string::npos, end->dump());
    auto started = c.wait_response(id, answer_create, 300s);
    BOOST_TEST_REQUIRE(started.contains("result"), started.dump());
    auto exited = c.wait_notification([](const json& n) { return n.value("method", "") == "train/exited"; }, 600s, answer_create);
    BOOST_TEST_REQUIRE(exited.has_value());
    BOOST_TEST(exited->at("params").value("exitCode", -1) == 0, exited->dump());
  }
  ::unsetenv("FERRY_TRAIN_PACK");
  BOOST_TEST(builds_logged(kCache) == before + 1);
}

// ctest: FIXTURES_SETUP trainer_gxx11. A box whose compiler is g++ 11 (Ubuntu 22.04's; CXX in
// ferry.json's env, as a user of such a box sets it): the probe accepts it, the pack builds with
// it and trains. The trainer it built is copied to FERRY_TRAINER_GXX11_BIN, where
// test_train_cli_gxx11 runs the binary-level training tests (resume bit-identical included) on it.
// No g++-11 here fails this test (scripts/setup.sh installs it): it never passes by skipping.
BOOST_AUTO_TEST_CASE(a_gxx11_box_builds_the_trainer_and_trains) {
  const fs::path out_bin = FERRY_TRAINER_GXX11_BIN;
  fs::remove(out_bin);
  const std::string gxx = ferry::test::run_command("command -v g++-11 || true");
  BOOST_TEST_REQUIRE(!gxx.empty(), "g++-11 is not installed: run scripts/setup.sh (or apt-get install g++-11)");
  const std::string gxx_version = ferry::test::run_command("g++-11 -dumpfullversion");
  const fs::path cache = gxx11_cache();
  SshdFixture sshd;
  sshd.trust_host_key();
  ferry::test::TempDir dir("ferry-trainer-gxx11");
  write_project(dir.path(), sshd, cache, json{{"CXX", "g++-11"}});
  auto p = start_train(dir.path());
  auto r = finish_train(p);
  BOOST_TEST_INFO(r.text);
  BOOST_TEST_REQUIRE(r.status == 0);
  BOOST_TEST(r.done);
  BOOST_TEST(fs::is_regular_file(dir.path() / "out" / "plot.svg"));
  const bool built = contains(r.build_stages, "compile");
  BOOST_TEST_MESSAGE((built ? "built with g++ 11 this run" : "g++ 11's trainer was cached"));

  auto pack = ferry::training::trainer_pack();
  BOOST_TEST_REQUIRE(pack.has_value());
  fs::path entry;
  for (const auto& e : fs::directory_iterator(cache))
    if (e.path().filename().string().rfind(pack->key() + "-", 0) == 0 && fs::is_regular_file(e.path() / "ferry-train")) entry = e.path();
  BOOST_TEST_REQUIRE(!entry.empty(), "no trainer for pack " + pack->key() + " in " + cache.string());
  BOOST_TEST(r.text.find(entry.string()) != std::string::npos);  // the one that trained
  // g++ 11 built it: CMake was configured with it, and its objects carry its version note.
  BOOST_TEST(configured_compiler(cache) == gxx.substr(0, gxx.find('\n')));
  const std::string note_end = ") " + gxx_version.substr(0, gxx_version.find('\n'));
  const auto notes = gcc_notes(entry / "ferry-train");
  BOOST_TEST(std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.ends_with(note_end); }),
             "no \"GCC: (...)" << note_end << "\" note in " << entry / "ferry-train");

  fs::last_write_time(entry, fs::file_time_type::clock::now());  // the newest, whatever pruning sees
  prune_old_trainers(cache, entry);
  fs::create_directories(out_bin.parent_path());
  fs::copy_file(entry / "ferry-train", out_bin, fs::copy_options::overwrite_existing);
}
