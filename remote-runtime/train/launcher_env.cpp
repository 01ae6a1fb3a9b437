// See launcher_env.hpp.
#include "remote-runtime/train/launcher_env.hpp"

#include <cerrno>
#include <cstdlib>

namespace ferry::train {
namespace {

Expected<int, std::string> int_var(const GetEnv& get, const char* name, int fallback, int min, int max) {
  auto v = get(name);
  if (!v || v->empty()) return fallback;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(v->c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || n < min || n > max)
    return Unexpected(std::string(name) + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                           "], got '" + *v + "'");
  return static_cast<int>(n);
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  // The first entry ends at a comma outside brackets.
  std::string first;
  int depth = 0;
  for (char c : nodelist) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) break;
    first += c;
  }
  // Each bracket group is its first member: "gpu[03-05,09]" -> "gpu03" (zero padding kept).
  std::string host;
  for (std::size_t i = 0; i < first.size(); ++i) {
    if (first[i] != '[') {
      host += first[i];
      continue;
    }
    const auto close = first.find(']', i);
    const std::string inside = first.substr(i + 1, close == std::string::npos ? std::string::npos : close - i - 1);
    host += inside.substr(0, inside.find_first_of("-,"));
    if (close == std::string::npos) break;
    i = close;
  }
  return host;
}

Expected<LauncherEnv, std::string> launcher_env(const GetEnv& get) {
  LauncherEnv env;
  const bool torchrun = get("WORLD_SIZE").has_value();
  const bool slurm = !torchrun && get("SLURM_NTASKS").has_value() && get("SLURM_PROCID").has_value();
  const char* world_var = slurm ? "SLURM_NTASKS" : "WORLD_SIZE";
  const char* rank_var = slurm ? "SLURM_PROCID" : "RANK";
  const char* local_var = slurm ? "SLURM_LOCALID" : "LOCAL_RANK";
  auto world = int_var(get, world_var, 1, 1, 65536);
  if (!world) return Unexpected(world.error());
  env.world_size = *world;
  auto rank = int_var(get, rank_var, 0, 0, env.world_size - 1);
  if (!rank) return Unexpected(rank.error());
  env.rank = *rank;
  auto local = int_var(get, local_var, env.rank, 0, 65535);
  if (!local) return Unexpected(local.error());
  env.local_rank = *local;
  auto local_world = int_var(get, slurm ? "SLURM_NTASKS_PER_NODE" : "LOCAL_WORLD_SIZE", 1, 1, 65536);
  // Slurm writes SLURM_NTASKS_PER_NODE as "4" or "4(x2)": only a plain number is read.
  env.local_world_size = local_world ? *local_world : 1;
  if (!local_world && !slurm) return Unexpected(local_world.error());
  auto port = int_var(get, "MASTER_PORT", 29500, 1, 65535);
  if (!port) return Unexpected(port.error());
  env.master_port = *port;
  if (auto addr = get("MASTER_ADDR"); addr && !addr->empty()) {
    env.master_addr = *addr;
  } else if (slurm) {
    auto nodes = get("SLURM_JOB_NODELIST");
    if (!nodes || nodes->empty()) nodes = get("SLURM_NODELIST");
    if (env.world_size > 1 && (!nodes || nodes->empty()))
      return Unexpected("under Slurm without SLURM_JOB_NODELIST: set MASTER_ADDR to the first node's address");
    if (nodes && !nodes->empty()) env.master_addr = first_slurm_host(*nodes);
  }
  env.launcher = torchrun ? "torchrun" : slurm ? "slurm" : "none";
  return env;
}

Expected<LauncherEnv, std::string> launcher_env_from_process() {
  return launcher_env([](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (!v) return std::nullopt;
    return std::string(v);
  });
}

}  // namespace ferry::train
