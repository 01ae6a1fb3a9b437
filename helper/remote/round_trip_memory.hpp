// What ferry remembers of the hosts it reached: each link's round trip, so that the next command
// to a far host can open its bulk lanes' SSH connections beside the link's own handshake instead
// of after it (0.35-0.45 s at 50 ms, which a big file's first chunks waited for). One small JSON
// file, at most kMaxRememberedHosts entries (the oldest go); a hint only: a missing, unreadable or
// stale file costs nothing but that head start, and the link's own measurement still decides
// every lane.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

namespace ferry::remote {

inline constexpr std::size_t kMaxRememberedHosts = 64;

// $XDG_CACHE_HOME/ferry/round-trips.json, else ~/.cache/ferry/round-trips.json; empty when
// neither is known.
std::filesystem::path default_round_trip_memory();

// The round trip last remembered for `host` (a key such as "alias user@host:port"), if any.
std::optional<std::chrono::microseconds> remembered_round_trip(const std::filesystem::path& file, const std::string& host);

// Records `rtt` for `host`, replacing the file atomically (a temp name beside it, then rename);
// false (and the file as it was) when it cannot be written.
bool remember_round_trip(const std::filesystem::path& file, const std::string& host, std::chrono::microseconds rtt);

}  // namespace ferry::remote
