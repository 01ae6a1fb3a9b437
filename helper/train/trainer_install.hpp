// ferry-train installs itself on an SSH box: probe what the box has (trainer_probe.hpp), and when
// no trainer for this pack and this LibTorch is cached there, upload the pack over the link and
// build it on the box (remote-runtime/train/box/build.sh) while its output streams back as
// progress. The result is cached in <cache>/<pack key>-<torch version>/ferry-train.
#pragma once

#include <expected>
#include <functional>
#include <filesystem>
#include <map>
#include <optional>
#include <stop_token>
#include <string>

#include "helper/train/build_progress.hpp"
#include "helper/train/trainer_probe.hpp"

#include "helper/remote/ssh_endpoint.hpp"

namespace ferry::training {

struct TrainerInstallOptions {
  std::string interpreter = "python3";      // ferry.json's: its torch is the first choice
  std::map<std::string, std::string> env;   // ferry.json's env, exported for the probe and build
  // Called on this thread as the build goes (not at all when nothing is built).
  std::function<void(const BuildProgressParser&)> on_progress;
};

struct TrainerInstall {
  std::string path;     // ferry-train on the box (absolute)
  bool built = false;   // built this time
  std::string version;  // its `ferry-train --version` line
  std::string pack_key;
  TrainerProbe probe;
};

// Finds or builds the trainer. Errors are one line saying what is missing and how to fix it,
// or (a failed build) where its log is on the box followed by the log's last lines.
std::expected<TrainerInstall, std::string> ensure_trainer(remote::SshEndpoint& endpoint, const TrainerInstallOptions& options);

// A build started in the background (ferry connect, ferry serve's connect): nothing waits for
// it; `ferry train` / train/start later wait on the box's build lock and find its result.
struct TrainerBackgroundBuild {
  std::optional<TrainerInstall> ready;  // already built: nothing started
  std::string log;                      // else: the started build's log on the box (absolute)
};

// Finds the trainer, or uploads the pack (when the box lacks it) and starts its build detached
// on the box, returning as soon as it runs. Errors as ensure_trainer's (what is missing, the fix).
std::expected<TrainerBackgroundBuild, std::string> start_trainer_build(remote::SshEndpoint& endpoint,
                                                                      const TrainerInstallOptions& options);

// Follows a background build's log (read once a second over the link) as progress until the
// build ends, `stop` says so, or the link fails: the trainer's path when it was built.
std::expected<std::string, std::string> follow_trainer_build(remote::SshEndpoint& endpoint, const std::string& log,
                                                             const std::function<void(const BuildProgressParser&)>& on_progress,
                                                             std::stop_token stop);

// Whether a project trains, so connects start the trainer's build for it: a `launch` entry of
// kind train, or a training config (diagnostics' looks_like_train_config, as the "Train" lens
// finds them) among the project's .json files (hidden folders, node_modules and files over
// 1 MiB skipped; the walk stops after 20000 entries).
bool project_trains(const std::filesystem::path& root, bool has_train_launch);

// The probe alone (ferry doctor): what the box has, without building anything.
std::expected<TrainerProbe, std::string> probe_trainer(remote::SshEndpoint& endpoint, const std::string& interpreter,
                                                       const std::map<std::string, std::string>& env);

// ferry doctor's last check (CLI and doctor/run): the trainer built (its --version: torch, CUDA or
// CPU, c10d backends), or what its first build will use, or a warning with what is missing.
remote::DoctorCheck doctor_trainer_check(remote::SshEndpoint& endpoint, const std::string& interpreter,
                                         const std::map<std::string, std::string>& env);

}  // namespace ferry::training
