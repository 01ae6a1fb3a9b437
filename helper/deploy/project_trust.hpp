// Project trust: whether the person at this machine has said that a project's ferry.json may make
// ferry connect, run commands, open tunnels and arm watchdogs. The decision lives outside the
// repository (the user's config directory), keyed by the project's real path, with a digest of each
// field that can make ferry act; a changed field makes the project untrusted again, as VS Code's
// Workspace Trust and PyCharm's "Trust project" do for their own settings.
#pragma once

#include <expected>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "helper/deploy/project_config.hpp"

namespace ferry::deploy {

// Field name (as in ferry.json) -> sha256 hex of its canonical JSON (sshConfig: of the path and the
// file's bytes, since the file decides where the key logs in). Only these fields are trusted:
// host, sshConfig, mappings, interpreter, trainer, env, tunnels, autostop, launch.
using TrustDigests = std::map<std::string, std::string>;
TrustDigests trust_digests(const ProjectConfig& config);

enum class TrustState {
  trusted,    // a recorded decision for this path with these very fields, or a trusted folder above it
  untrusted,  // never trusted here
  changed,    // trusted once, but a field that matters changed since
};

struct TrustStatus {
  TrustState state = TrustState::untrusted;
  std::vector<std::string> changed;  // state changed: the fields that differ, ferry.json's names
  std::string via;                   // state trusted: "project" or the trusted folder's path
  bool trusted() const { return state == TrustState::trusted; }
};

// What a person should read before trusting: what ferry would do for this project, and what in it
// deserves a second look (an ssh config inside the repository, host-key checking turned off, a
// reverse tunnel, shell commands run on the box).
struct TrustSummary {
  std::vector<std::string> actions;
  std::vector<std::string> warnings;
};
TrustSummary trust_summary(const ProjectConfig& config);

// The question, one paragraph: why it is asked (new or changed), the summary, how to answer.
std::string trust_question(const ProjectConfig& config, const TrustStatus& status);
// The one-line refusal for a project that is not trusted (CLI stderr, the server's error message).
std::string untrusted_message(const ProjectConfig& config, const TrustStatus& status);

// The decisions: one file per project under DIR/projects/ (named by a digest of its real path:
// {"root", "fields": TrustDigests, "trustedAt"}) and DIR/folders.json (folders whose every
// project is trusted, whatever its fields). Files 0600 and directories 0700, replaced atomically.
class TrustStore {
 public:
  // $XDG_CONFIG_HOME/ferry/trust, else ~/.config/ferry/trust; empty when none can be named (no
  // HOME): then nothing is trusted and nothing can be recorded. A store inside the project itself
  // (an editor setting that moved XDG_CONFIG_HOME there) is never believed.
  static std::filesystem::path default_dir();

  explicit TrustStore(std::filesystem::path dir = default_dir());

  TrustStatus check(const ProjectConfig& config) const;
  std::expected<void, std::string> trust(const ProjectConfig& config);
  // Forgets the decision for the project at `root`; false when there was none.
  std::expected<bool, std::string> revoke(const std::filesystem::path& root);
  std::expected<void, std::string> trust_folder(const std::filesystem::path& folder);
  std::vector<std::filesystem::path> trusted_folders() const;
  // Every recorded project root.
  std::vector<std::filesystem::path> trusted_projects() const;

  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path record_file(const std::filesystem::path& real_root) const;
  std::filesystem::path dir_;
};

}  // namespace ferry::deploy
