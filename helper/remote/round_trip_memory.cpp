// The remembered round trips: see round_trip_memory.hpp.
#include "helper/remote/round_trip_memory.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/full_io.hpp"
#include "common/private_files.hpp"
#include "common/temp_name.hpp"
#include "common/unique_fd.hpp"
#include "common/user_dirs.hpp"
#include "protocol/json_parse.hpp"

namespace ferry::remote {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// {"hosts": {KEY: {"rttUs": N, "at": UNIX SECONDS}}}; anything else reads as nothing remembered.
json load(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return json::object();
  std::stringstream text;
  text << in.rdbuf();
  json j = protocol::parse_json_text(text.str()).value_or(json());
  if (!j.is_object() || !j.contains("hosts") || !j["hosts"].is_object()) return json::object();
  return j;
}

}  // namespace

fs::path default_round_trip_memory() {
  if (auto cache = platform::cache_home()) return *cache / "ferry" / "round-trips.json";
  return {};
}

std::optional<std::chrono::microseconds> remembered_round_trip(const fs::path& file, const std::string& host) {
  if (file.empty()) return std::nullopt;
  const json j = load(file);
  if (!j.contains("hosts")) return std::nullopt;
  const auto it = j["hosts"].find(host);
  if (it == j["hosts"].end() || !it->is_object()) return std::nullopt;
  const auto rtt = it->find("rttUs");
  if (rtt == it->end() || !rtt->is_number_unsigned()) return std::nullopt;
  return std::chrono::microseconds(rtt->get<std::uint64_t>());
}

bool remember_round_trip(const fs::path& file, const std::string& host, std::chrono::microseconds rtt) {
  if (file.empty() || rtt.count() < 0) return false;
  json j = load(file);
  if (!j.contains("hosts")) j = json{{"hosts", json::object()}};
  json& hosts = j["hosts"];
  hosts[host] = json{{"rttUs", static_cast<std::uint64_t>(rtt.count())}, {"at", static_cast<std::int64_t>(std::time(nullptr))}};
  // The oldest go first once there are too many.
  while (hosts.size() > kMaxRememberedHosts) {
    auto oldest = hosts.begin();
    for (auto it = hosts.begin(); it != hosts.end(); ++it)
      if (it->value("at", std::int64_t{0}) < oldest->value("at", std::int64_t{0})) oldest = it;
    hosts.erase(oldest);
  }
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  const fs::path tmp = file.parent_path() / posix::temp_name(file.filename().string());
  {
    // 0600 like the rest of ferry's own state: which hosts this user reaches is theirs.
    posix::UniqueFd out(posix::open_private(tmp, O_WRONLY | O_TRUNC));
    const std::string text = j.dump();
    if (!out || posix::write_full(out.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, file, ec);
  if (!ec) return true;
  fs::remove(tmp, ec);
  return false;
}

}  // namespace ferry::remote
