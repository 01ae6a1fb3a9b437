// CloudEventTail: lines the autostop watchdog and the spot watcher append after the tail starts
// become cloud/event params, in order, once each; earlier lines (history) and a half-written line
// are not sent; a file that appears later is followed from its start.
#define BOOST_TEST_MODULE cloud_events
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <vector>

#include <nlohmann/json.hpp>

#include "remote-runtime/agent/autostop/autostop_state.hpp"
#include "remote-runtime/agent/autostop/cloud_events.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait_for.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

namespace {

struct Received {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<json> events;
  void add(const json& j) {
    std::lock_guard lock(mu);
    events.push_back(j);
    cv.notify_all();
  }
  bool wait_for_count(std::size_t n) {
    std::unique_lock lock(mu);
    return ferry::test::wait_on(cv, lock, [&] { return events.size() >= n; }, 10000ms);
  }
};

void append(const fs::path& file, const std::string& text) {
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  BOOST_REQUIRE(fd >= 0);
  BOOST_REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fd);
}

}  // namespace

BOOST_AUTO_TEST_CASE(new_lines_of_both_files_become_events_history_does_not) {
  ferry::test::TempDir dir("ferry-cloud-events");
  const ferry::agent::autostop::Paths paths{dir.path()};
  ferry::agent::autostop::record_event(paths, "armed", {{"idleSeconds", 60}});  // history
  Received got;
  {
    ferry::agent::autostop::CloudEventTail tail(dir.path(), [&](const json& j) { got.add(j); });
    ferry::agent::autostop::record_event(paths, "cancelled");
    BOOST_REQUIRE(got.wait_for_count(1));
    // The spot watcher's file does not exist yet: it is followed from its start once it does.
    append(dir / "spot" / "events.jsonl", R"({"event":"interrupted","runs":["r1"]})" "\n" R"({"event":"half")");
    BOOST_REQUIRE(got.wait_for_count(2));
    append(dir / "spot" / "events.jsonl", "}\n");
    BOOST_REQUIRE(got.wait_for_count(3));
  }
  std::lock_guard lock(got.mu);
  BOOST_TEST_REQUIRE(got.events.size() == 3u);
  BOOST_TEST(got.events[0]["source"] == "autostop");
  BOOST_TEST(got.events[0]["event"]["event"] == "cancelled");
  BOOST_TEST(got.events[1]["source"] == "spot");
  BOOST_TEST(got.events[1]["event"]["runs"] == json::array({"r1"}));
  BOOST_TEST(got.events[2]["event"]["event"] == "half");  // sent once whole, not before
}
