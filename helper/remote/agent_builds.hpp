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

namespace ferry::remote {

// The architectures ferry has an agent for, as Linux's `uname -m` spells them.
inline constexpr std::array<std::string_view, 2> kAgentArches{"x86_64", "aarch64"};

// $FERRY_AGENT, else ferry-agent next to the running executable.
std::expected<std::filesystem::path, std::string> find_agent_binary();
// The architecture this ferry was built for (its own agent, ferry-agent, is that one's).
std::string_view native_arch();

// The agent for `arch`: $FERRY_AGENT_X86_64 / $FERRY_AGENT_AARCH64; for the native arch, else
// find_agent_binary() ($FERRY_AGENT, or ferry-agent next to this executable); for another, else
// ferry-agent-<arch> next to this executable. The error names where it looked.
std::expected<std::filesystem::path, std::string> find_agent_for_arch(std::string_view arch);

// `uname -sm` -> one of kAgentArches ("Linux x86_64" -> "x86_64"; "Linux arm64" -> "aarch64");
// nullopt for any other OS or architecture.
std::optional<std::string> agent_arch_of(std::string_view uname_sm);

// The one-line refusal for a box ferry has no agent for: "... is FreeBSD amd64: ferry-agent runs on
// x86-64 and aarch64 Linux".
std::string unsupported_box_message(std::string_view box, std::string_view uname_sm);

}  // namespace ferry::remote
