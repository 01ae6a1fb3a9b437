// `ferry init`: writes a starter ferry.json (validated before it is written) in the project dir.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>

#include "helper/cli/commands.hpp"
#include "helper/deploy/project_trust.hpp"
#include "helper/cli/exit_codes.hpp"
#include "helper/deploy/project_config.hpp"
#include "helper/sync/atomic_file.hpp"

namespace ferry::cli {
namespace {

namespace fs = std::filesystem;

struct InitOptions {
  std::string host = "local";
  std::string remote_root;  // default ~/ferry/<name>
  std::string name;         // default: the folder's name, made safe
  bool force = false;
  // --slurm and the options an HPC user names first; the rest go into ferry.json by hand.
  bool slurm = false;
  std::string partition, account, time;
  int gpus_per_node = 0;
};

// ferry.json's `slurm` block from the flags: nullopt without --slurm or any of its options.
std::optional<nlohmann::json> slurm_block(const InitOptions& o) {
  if (!o.slurm && o.partition.empty() && o.account.empty() && o.time.empty() && !o.gpus_per_node) return std::nullopt;
  nlohmann::json j = nlohmann::json::object();
  if (!o.partition.empty()) j["partition"] = o.partition;
  if (!o.account.empty()) j["account"] = o.account;
  if (!o.time.empty()) j["time"] = o.time;
  if (o.gpus_per_node) j["gpusPerNode"] = o.gpus_per_node;
  return j;
}

// "partition gpu, account proj1, time 2:00:00" (or the cluster's defaults).
std::string slurm_summary(const protocol::SlurmJobOptions& s) {
  std::string out;
  for (auto [name, value] : {std::pair{"partition", s.partition}, std::pair{"account", s.account}, std::pair{"time", s.time}})
    if (!value.empty()) out += (out.empty() ? "" : ", ") + std::string(name) + " " + value;
  if (s.gpus_per_node) out += (out.empty() ? "" : ", ") + std::to_string(s.gpus_per_node) + " GPU(s) per node";
  return out.empty() ? "the cluster's defaults" : out;
}

std::string safe_name(const fs::path& dir) {
  std::string out;
  for (char c : dir.filename().string())
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '-';
  if (out.size() > 100) out.resize(100);
  if (out.empty() || out == "." || out == "..") out = "project";
  return out;
}

int run_init(const GlobalOptions& g, const InitOptions& o) {
  std::error_code ec;
  fs::path dir = g.project_dir ? fs::path(*g.project_dir) : fs::current_path(ec);
  dir = fs::absolute(dir, ec).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();
  if (!fs::is_directory(dir, ec)) {
    std::cerr << "ferry init: " << dir.string() << " is not a directory\n";
    return exit_status::kUsage;
  }
  fs::path file = dir / deploy::kProjectFileName;
  if (fs::exists(file, ec) && !o.force) {
    std::cerr << "ferry init: " << file.string() << " already exists (use --force to overwrite it)\n";
    return exit_status::kFailed;
  }
  std::string name = o.name.empty() ? safe_name(dir) : o.name;
  std::string remote = o.remote_root.empty() ? "~/ferry/" + name : o.remote_root;
  auto doc = deploy::starter_config(o.host, remote, name);
  if (auto slurm = slurm_block(o)) doc["slurm"] = *slurm;
  // What we write must load: a bad --host or --remote-root is reported now, by its field.
  auto config = deploy::parse_project(doc, dir);
  if (!config) {
    std::cerr << "ferry init: the config would be invalid: " << config.error().to_string() << "\n";
    return exit_status::kUsage;
  }
  // Temp file + rename: an interrupted init never leaves half a ferry.json behind.
  if (auto w = sync::write_project_file_atomically(file, doc.dump(2) + "\n"); !w) {
    std::cerr << "ferry init: cannot write " << file.string() << ": " << w.error()
              << " (ferry.json goes in the project directory: check that you may write there, or pass --project DIR)\n";
    return exit_status::kFailed;
  }
  // The person wrote this ferry.json with this command: it is theirs, so it is trusted as written.
  if (auto trusted = deploy::TrustStore().trust(*config); !trusted)
    std::cerr << "ferry init: not recorded as trusted (" << trusted.error() << "); ferry will ask before using it\n";
  std::cout << "Wrote " << file.string() << "\n"
            << "  name         " << config->name << "\n"
            << "  host         " << config->host << (config->host == "local" ? "  (a sandbox on this machine)" : "")
            << "\n"
            << "  mapping      " << config->mappings[0].local << " -> " << config->mappings[0].remote << "\n"
            << "  interpreter  " << config->interpreter << "\n";
  if (config->slurm)
    std::cout << "  slurm        runs are Slurm jobs (" << slurm_summary(*config->slurm) << "; docs/slurm.md)\n";
  std::cout << "Edit it to add exclude patterns, env and tunnels (reference: docs/config.md).\n";
  return exit_status::kOk;
}

}  // namespace

void add_init_command(CLI::App& app, GlobalOptions& g) {
  auto opts = std::make_shared<InitOptions>();
  auto* cmd = app.add_subcommand("init", "Write a starter ferry.json in the current directory (or --project DIR)");
  cmd->add_option("--host", opts->host, "\"local\", an ssh config alias, or user@host:port")->capture_default_str();
  cmd->add_option("--remote-root", opts->remote_root, "Where the project lives on the host (default: ~/ferry/NAME)");
  cmd->add_option("--name", opts->name, "Project name (default: the folder's name)");
  cmd->add_flag("--force", opts->force, "Overwrite an existing ferry.json");
  cmd->add_flag("--slurm", opts->slurm, "The host is a Slurm cluster's login node: runs become jobs (docs/slurm.md)");
  cmd->add_option("--partition", opts->partition, "Slurm partition for the jobs (implies --slurm)");
  cmd->add_option("--account", opts->account, "Slurm account to charge (implies --slurm)");
  cmd->add_option("--time", opts->time, "Slurm time limit per job, e.g. 2:00:00 (implies --slurm)");
  cmd->add_option("--gpus-per-node", opts->gpus_per_node, "GPUs per node for the jobs (implies --slurm)")->check(CLI::Range(1, 100000));
  cmd->callback([&g, opts] { g.exit_code = run_init(g, *opts); });
}

}  // namespace ferry::cli
