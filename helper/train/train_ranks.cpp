// See train_ranks.hpp.
#include "helper/train/train_ranks.hpp"

#include <algorithm>
#include <set>

namespace ferry::training {

std::vector<RankSlot> plan_ranks(const std::vector<std::string>& hosts, int nproc_per_host) {
  std::vector<RankSlot> slots;
  for (std::size_t h = 0; h < hosts.size(); ++h)
    for (int local = 0; local < nproc_per_host; ++local)
      slots.push_back({hosts[h], static_cast<int>(h) * nproc_per_host + local, local});
  return slots;
}

std::map<std::string, std::string> rank_env(const RankSlot& slot, int world_size, int nproc_per_host, const Rendezvous& rv) {
  return {{"RANK", std::to_string(slot.rank)},
          {"WORLD_SIZE", std::to_string(world_size)},
          {"LOCAL_RANK", std::to_string(slot.local_rank)},
          {"LOCAL_WORLD_SIZE", std::to_string(nproc_per_host)},
          {"MASTER_ADDR", rv.master_addr},
          {"MASTER_PORT", std::to_string(rv.master_port)}};
}

std::optional<std::string> split_hosts(const std::string& text, std::vector<std::string>& out) {
  out.clear();
  std::set<std::string> seen;
  std::size_t start = 0;
  for (;;) {
    const auto comma = text.find(',', start);
    std::string host = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (host.empty()) return "--hosts: an empty host name in '" + text + "' (give gpu1,gpu2,...)";
    if (!seen.insert(host).second)
      return "--hosts: " + host + " is named twice (for more processes on one host use --nproc-per-host)";
    out.push_back(host);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return std::nullopt;
}

std::optional<RankOutcome> first_failure(const std::vector<RankOutcome>& outcomes) {
  std::optional<RankOutcome> best;
  auto earlier = [](const RankOutcome& a, const RankOutcome& b) {
    if (a.ended_at.empty() != b.ended_at.empty()) return !a.ended_at.empty();
    if (a.ended_at != b.ended_at) return a.ended_at < b.ended_at;
    return a.slot.rank < b.slot.rank;
  };
  for (const auto& o : outcomes)
    if (o.status != 0 && (!best || earlier(o, *best))) best = o;
  return best;
}

}  // namespace ferry::training
