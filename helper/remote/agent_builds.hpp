// The ferry-agent builds this ferry carries, one per box architecture (x86-64 and aarch64 Linux,
// both static), and which one a box gets: SshEndpoint's launch asks the box's `uname -sm` in the
// same exec that starts the agent, so choosing costs no round trip.
#pragma once

#include <array>
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::remote {

// The architectures ferry has an agent for, as Linux's `uname -m` spells them.
inline constexpr std::array<std::string_view, 2> kAgentArches{"x86_64", "aarch64"};

// Where this ferry's agents are: next to the running executable (a build tree, the VS Code
// extension's bin/), then ../libexec/ferry/ from it (the installed layout: bin/ferry with
// libexec/ferry/ferry-agent*, as `cmake --install`, the .deb and the tarball lay it out).
std::vector<std::filesystem::path> agent_dirs();

// $FERRY_AGENT, else ferry-agent in agent_dirs().
std::expected<std::filesystem::path, std::string> find_agent_binary();
// The architecture this ferry was built for (its own agent, ferry-agent, is that one's).
std::string_view native_arch();

// The agent for `arch`: $FERRY_AGENT_X86_64 / $FERRY_AGENT_AARCH64; for the native arch, else
// find_agent_binary() ($FERRY_AGENT, or ferry-agent in agent_dirs()); for another, else
// ferry-agent-<arch> there. The error names where it looked.
std::expected<std::filesystem::path, std::string> find_agent_for_arch(std::string_view arch);

// "0.1.0 1a2b3c4d5e6f": the FERRY-BUILD marker in a ferry binary's bytes (common/build_info.hpp),
// read without running it (an aarch64 agent cannot run here); nullopt when it has none.
std::optional<std::string> read_build_marker(const std::filesystem::path& binary);

// Whether the agents this ferry uploads are there and of this very build: one line per
// architecture. A missing native agent, or any agent of another build (an install half
// upgraded, a copied ferry), is "fail"; a missing agent for the other architecture is "warn"
// (only those boxes are out of reach). Agents named by $FERRY_AGENT* are the user's choice: "pass".
struct AgentBuildCheck {
  std::string arch;
  std::string status;  // "pass", "warn", "fail"
  std::string detail;
  std::string fix;     // empty on pass
};
std::vector<AgentBuildCheck> check_agent_builds();

// `uname -sm` -> one of kAgentArches ("Linux x86_64" -> "x86_64"; "Linux arm64" -> "aarch64");
// nullopt for any other OS or architecture.
std::optional<std::string> agent_arch_of(std::string_view uname_sm);

// The one-line refusal for a box ferry has no agent for: "... is FreeBSD amd64: ferry-agent runs on
// x86-64 and aarch64 Linux".
std::string unsupported_box_message(std::string_view box, std::string_view uname_sm);

}  // namespace ferry::remote
