// One training over many processes and hosts (`ferry train --hosts a,b --nproc-per-host N`):
// which rank runs where, the torchrun environment each one gets, and which failure is reported
// when several ranks end badly (the earliest on the boxes' clocks: the others died of it).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ferry::training {

struct RankSlot {
  std::string host;
  int rank = 0;
  int local_rank = 0;
};

// Ranks host by host: host 0 holds ranks 0..N-1, host 1 N..2N-1, ... (torchrun's node order).
std::vector<RankSlot> plan_ranks(const std::vector<std::string>& hosts, int nproc_per_host);

struct Rendezvous {
  std::string master_addr;  // rank 0's host as the other hosts reach it
  int master_port = 29500;
};

// RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT.
std::map<std::string, std::string> rank_env(const RankSlot& slot, int world_size, int nproc_per_host, const Rendezvous& rv);

// "gpu1,gpu2" -> {"gpu1", "gpu2"}; empty names and repeats are errors (a repeat would put two
// nodes' ranks on one box under one LOCAL_RANK numbering).
std::optional<std::string> split_hosts(const std::string& text, std::vector<std::string>& out);

struct RankOutcome {
  RankSlot slot;
  int status = 0;           // ferry's exit status for it (0 ok, 128+N for signal N, 255 not followed)
  std::string ended_at;     // the box's ISO time, "" unknown
  std::string description;  // "exited with status 1", "killed by SIGKILL"
};

// The failure to report: the earliest-ended non-zero outcome (unknown times last, then rank
// order); nothing when every rank succeeded.
std::optional<RankOutcome> first_failure(const std::vector<RankOutcome>& outcomes);

}  // namespace ferry::training
