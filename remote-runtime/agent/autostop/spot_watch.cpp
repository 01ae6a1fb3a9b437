// Spot interruption notices: see spot_watch.hpp.
#include "remote-runtime/agent/autostop/spot_watch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/private_files.hpp"
#include "common/unique_fd.hpp"
#include "remote-runtime/agent/autostop/autostop_state.hpp"
#include "remote-runtime/agent/box_lookup.hpp"
#include "remote-runtime/agent/raw_binding.hpp"
#include "remote-runtime/agent/run/detached_agent.hpp"
#include "remote-runtime/agent/run/run_store.hpp"

namespace ferry::agent::spot {

namespace {

fs::path dir_of(const fs::path& state) { return state / "spot"; }
fs::path settings_of(const fs::path& state) { return dir_of(state) / "settings.json"; }

void record(const fs::path& state, const std::string& event, json detail = json::object()) {
  // Same line format as autostop's events, in the spot directory.
  autostop::Paths p{state};
  detail["at"] = run::iso_utc_ms(std::chrono::system_clock::now());
  detail["event"] = event;
  ferry::posix::make_private_dirs(dir_of(state));
  std::string line = detail.dump() + "\n";
  int fd = ferry::posix::open_private(dir_of(state) / "events.jsonl", O_WRONLY | O_APPEND);
  if (fd < 0) return;
  [[maybe_unused]] auto n = ::write(fd, line.data(), line.size());
  ::close(fd);
}

bool wait_fd(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, static_cast<int>(left));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return false;
  }
}

}  // namespace

std::expected<Source, std::string> source_from_json(const json& j) {
  if (!j.is_object()) return std::unexpected("expected {source: \"aws\"|\"gcp\"|\"url\"|\"file\", url?, path?, pollSeconds?}");
  Source s;
  s.kind = j.value("source", std::string("aws"));
  if (s.kind == "aws") s.url = kAwsNoticeUrl;
  else if (s.kind == "gcp") s.url = kGcpNoticeUrl;
  else if (s.kind == "url") s.url = j.value("url", std::string());
  else if (s.kind == "file") s.path = j.value("path", std::string());
  else return std::unexpected("/source: expected one of \"aws\" \"gcp\" \"url\" \"file\"");
  if (j.contains("url") && s.kind != "url") return std::unexpected("/url: only source \"url\" takes a url");
  if (s.kind == "url" && !s.url.starts_with("http://")) return std::unexpected("/url: expected an http:// URL");
  if (s.kind == "file" && (s.path.empty() || s.path.front() != '/')) return std::unexpected("/path: expected an absolute file path");
  if (auto it = j.find("pollSeconds"); it != j.end()) {
    if (!it->is_number() || it->get<double>() < 0.1 || it->get<double>() > 60) return std::unexpected("/pollSeconds: expected 0.1 to 60");
    s.poll_seconds = it->get<double>();
  }
  return s;
}

json to_json(const Source& s) {
  json j{{"source", s.kind}, {"pollSeconds", s.poll_seconds}};
  if (!s.url.empty()) j["url"] = s.url;
  if (!s.path.empty()) j["path"] = s.path;
  return j;
}

std::expected<std::pair<int, std::string>, std::string> http_get(const std::string& url, const std::string& header) {
  if (!url.starts_with("http://")) return std::unexpected("not an http:// URL");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  std::string rest = url.substr(7);
  auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash), target = slash == std::string::npos ? "/" : rest.substr(slash);
  std::string host = authority, port = "80";
  if (auto colon = authority.rfind(':'); colon != std::string::npos) host = authority.substr(0, colon), port = authority.substr(colon + 1);
  unsigned port_number = 0;
  if (auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), port_number);
      ec != std::errc() || end != port.data() + port.size() || port_number == 0 || port_number > 65535)
    return std::unexpected("bad port in " + authority);
  auto address = resolve_address(host, static_cast<unsigned short>(port_number));
  if (!address) return std::unexpected(address.error());
  const ferry::posix::UniqueFd sock(::socket(address->family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  const int fd = sock.get();
  int rc = fd < 0 ? -1 : ::connect(fd, address->get(), address->length);
  if (fd < 0) return std::unexpected("socket failed");
  int err = 0;
  socklen_t len = sizeof err;
  if ((rc != 0 && errno != EINPROGRESS) || !wait_fd(fd, POLLOUT, deadline) ||
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0)
    return std::unexpected("cannot connect to " + authority);
  std::string request = "GET " + target + " HTTP/1.1\r\nHost: " + authority + "\r\nConnection: close\r\n" +
                        (header.empty() ? "" : header + "\r\n") + "\r\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size()))
    return std::unexpected("send failed");
  std::string response;
  char buf[4096];
  while (response.size() < (1 << 20)) {
    if (!wait_fd(fd, POLLIN, deadline)) return std::unexpected("no answer in time");
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    response.append(buf, static_cast<std::size_t>(n));
  }
  if (!response.starts_with("HTTP/1.") || response.size() < 12) return std::unexpected("not an HTTP answer");
  auto body_at = response.find("\r\n\r\n");
  return std::pair{std::atoi(response.substr(9, 3).c_str()), body_at == std::string::npos ? "" : response.substr(body_at + 4)};
}

std::optional<std::string> check_notice(const Source& s) {
  if (s.kind == "file") {
    std::error_code ec;
    if (!fs::exists(s.path, ec)) return std::nullopt;
    auto text = std::string("notice file ") + s.path;
    return text;
  }
  // GCP answers 200 "FALSE" until preemption; AWS answers 404 until an interruption is scheduled.
  auto r = http_get(s.url, s.kind == "gcp" ? "Metadata-Flavor: Google" : "");
  if (!r || r->first != 200) return std::nullopt;
  if (s.kind == "gcp" && r->second.find("TRUE") == std::string::npos) return std::nullopt;
  return r->second.substr(0, 1000);
}

std::vector<std::pair<std::string, long long>> training_runs(const fs::path& state_dir) {
  std::vector<std::pair<std::string, long long>> out;
  run::RunStore store(state_dir);
  for (const auto& id : store.ids(/*unended_only=*/true)) {
    auto files = store.find(id);
    if (!files) continue;
    auto status = run::read_status(*files);
    if (!status || status->state != "running") continue;
    bool trainer = false;
    for (const auto& a : status->meta.value("argv", json::array()))
      if (a.is_string() && a.get<std::string>().find("ferry-train") != std::string::npos) trainer = true;
    long long pgid = status->meta.value("pgid", 0LL);
    if (trainer && pgid > 1) out.emplace_back(id, pgid);
  }
  return out;
}

int watch(const fs::path& state_dir) {
  std::error_code ec;
  ferry::posix::make_private_dirs(dir_of(state_dir));
  int lock = ferry::posix::open_private(dir_of(state_dir) / "watch.lock", O_RDWR);
  if (lock < 0 || ::flock(lock, LOCK_EX | LOCK_NB) != 0) return 0;
  while (true) {
    auto j = run::read_json_file(settings_of(state_dir));
    if (!j) return 0;  // cancelled
    auto s = source_from_json(*j);
    if (!s) return 1;
    if (auto notice = check_notice(*s)) {
      // Recorded before the signals: whoever sees a run end can already read why.
      auto targets = training_runs(state_dir);
      json ids = json::array();
      for (const auto& [id, pgid] : targets) ids.push_back(id);
      json detail{{"notice", *notice}, {"source", s->kind}, {"runs", ids}};
      run::write_json_atomic(dir_of(state_dir) / "notice.json", detail, 0600);
      fs::remove(settings_of(state_dir), ec);
      record(state_dir, "interrupted", detail);
      for (const auto& [id, pgid] : targets) ::kill(static_cast<pid_t>(-pgid), SIGTERM);
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(s->poll_seconds));
  }
}

bool ensure_watcher(const fs::path& state_dir) {
  std::error_code ec;
  if (!fs::exists(settings_of(state_dir), ec)) return true;
  std::string dir = fs::absolute(state_dir).string();
  std::string log = (dir_of(state_dir) / "watch.log").string();
  return run::spawn_detached_agent({{"ferry-agent", "--spot-watch", dir}, log});
}

std::optional<protocol::Response> handle_spot_method(const protocol::Request& r, const fs::path& state_dir) {
  namespace p = ferry::protocol;
  if (r.method == "spot/watch") {
    auto s = source_from_json(r.params.is_null() ? json::object() : r.params);
    if (!s) return p::make_error(r.id, p::error_code::kInvalidParams, "spot/watch: " + s.error());
    std::error_code ec;
    ferry::posix::make_private_dirs(dir_of(state_dir));
    fs::remove(dir_of(state_dir) / "notice.json", ec);
    if (!run::write_json_atomic(settings_of(state_dir), to_json(*s), 0600) || !ensure_watcher(state_dir))
      return p::make_error(r.id, p::error_code::kInternalError, "spot/watch: cannot arm the watcher");
    record(state_dir, "watching", to_json(*s));
    return p::make_result(r.id, json{{"watching", true}, {"settings", to_json(*s)}});
  }
  if (r.method == "spot/cancel") {
    std::error_code ec;
    bool was = fs::remove(settings_of(state_dir), ec);
    return p::make_result(r.id, json{{"watching", false}, {"wasWatching", was}});
  }
  if (r.method == "spot/status") {
    json j{{"watching", fs::exists(settings_of(state_dir))}};
    if (auto s = run::read_json_file(settings_of(state_dir))) j["settings"] = *s;
    if (auto n = run::read_json_file(dir_of(state_dir) / "notice.json")) j["notice"] = *n;
    return p::make_result(r.id, j);
  }
  return std::nullopt;
}

void bind_spot_methods(protocol::BindingTable& table, const fs::path& state_dir) {
  bind_raw_family(table, {"spot/watch", "spot/cancel", "spot/status"},
                  [state_dir](const protocol::Request& r) { return handle_spot_method(r, state_dir); });
}

}  // namespace ferry::agent::spot
