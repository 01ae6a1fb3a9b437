// Runs left behind, named after a connect (runs_left_behind.hpp).
#include "helper/server/runs_left_behind.hpp"

#include <algorithm>

#include "helper/server/run_log.hpp"
#include "helper/server/server_state.hpp"

namespace ferry::server {

namespace {

constexpr const char* kShow = "Show Output";
constexpr const char* kStop = "Stop It";
constexpr const char* kLeave = "Leave It Running";

std::string command_words(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  constexpr std::size_t kMax = 80;
  return out.size() > kMax ? out.substr(0, kMax - 3) + "..." : out;
}

void show_output(ServerState& s, ProjectLink& link, const run::RunInfo& r) {
  auto log = RunLog::create(link.config().root, "run-" + r.id);
  if (!log) {
    s.questions.show(MessageType::error, "ferry: cannot follow run " + r.id + ": " + log.error());
    return;
  }
  RunSink sink;
  sink.output = [log = *log](const run::OutputRecord& rec) { log->write(rec.data); };
  sink.exited = [&s, log = *log, id = r.id](const protocol::json& exited) {
    s.questions.log(MessageType::info, "ferry: run " + id + " ended: " + exited.dump() + " (output: " + log->path().string() + ")");
  };
  if (auto attached = s.runs->attach(r.id, 0, std::move(sink), link.config().root.string()); !attached) {
    s.questions.show(MessageType::error, "ferry: cannot follow run " + r.id + ": " + attached.error().message);
    return;
  }
  show_file(s, (*log)->path(), "run " + r.id + "'s output is in");
}

void stop_run(ServerState& s, ProjectLink& link, const std::string& id) {
  if (auto sent = link.runs().signal(id, "TERM"); !sent) {
    s.questions.show(MessageType::warning, "ferry: could not stop run " + id + ": " + sent.error().message);
    return;
  }
  s.questions.log(MessageType::info, "ferry: sent SIGTERM to run " + id + " (`ferry kill " + id +
                                         " --signal KILL` ends it if it does not stop)");
}

}  // namespace

std::vector<run::RunInfo> runs_left_behind(const std::vector<run::RunInfo>& runs) {
  std::vector<run::RunInfo> out;
  for (const auto& r : runs)
    if (r.state == "running" && r.followed == false) out.push_back(r);
  // Newest first, to the millisecond (ids of one second sort by their random part).
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.started_at > b.started_at; });
  return out;
}

bool LeftBehindOffers::first_time(const std::string& run_id) {
  std::lock_guard lock(mutex_);
  return offered_.insert(run_id).second;
}

void offer_runs_left_behind(ServerState& s, ProjectLink& link, LeftBehindOffers& offers,
                            const std::vector<run::RunInfo>& left, std::stop_token stop) {
  protocol::CancellationSource cancel;
  std::stop_callback on_stop(stop, [&cancel] { cancel.cancel(); });
  const bool ferry_client = s.questions.traits().ferry;
  for (const auto& r : left) {
    if (stop.stop_requested()) return;
    if (!offers.first_time(r.id)) continue;
    std::string message = "ferry: run " + r.id + " (" + command_words(r.argv) + ", started " + r.started_at +
                          ") is still running on " + link.host() +
                          " with no ferry following it: the one that started it was stopped or killed.";
    if (ferry_client) message += " The Runs view attaches to it.";
    std::vector<std::string> actions{kStop, kLeave};
    if (!ferry_client) actions.insert(actions.begin(), kShow);
    auto choice = s.questions.choose(MessageType::warning, message, actions, cancel.token());
    if (!choice || *choice == kLeave) continue;
    if (*choice == kStop) stop_run(s, link, r.id);
    else if (*choice == kShow) show_output(s, link, r);
  }
}

}  // namespace ferry::server
