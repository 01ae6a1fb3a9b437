// ferry-train installs itself on an SSH box: probe what the box has (trainer_probe.hpp), and when
// no trainer for this pack and this LibTorch is cached there, upload the pack over the link and
// build it on the box (remote-runtime/train/box/build.sh) while its output streams back as
// progress. The result is cached in <cache>/<pack key>-<torch version>/ferry-train.
#pragma once

#include <expected>
#include <functional>
#include <map>
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

// The probe alone (ferry doctor): what the box has, without building anything.
std::expected<TrainerProbe, std::string> probe_trainer(remote::SshEndpoint& endpoint, const std::string& interpreter,
                                                       const std::map<std::string, std::string>& env);

// ferry doctor's last check (CLI and doctor/run): the trainer built (its --version: torch, CUDA or
// CPU, c10d backends), or what its first build will use, or a warning with what is missing.
remote::DoctorCheck doctor_trainer_check(remote::SshEndpoint& endpoint, const std::string& interpreter,
                                         const std::map<std::string, std::string>& env);

}  // namespace ferry::training
