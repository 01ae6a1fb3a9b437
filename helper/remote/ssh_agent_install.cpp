// SshEndpoint's agent install: the local ferry-agent builds (one per box arch) hashed once, and
// the upload of the box's arch's build when the box lacks that exact build (cat to a temp name,
// hash check, chmod, atomic rename over the old build, which a running agent keeps by its inode).
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include "common/temp_name.hpp"
#include "ferry/version.hpp"
#include "helper/remote/agent_builds.hpp"
#include "helper/remote/ssh_endpoint.hpp"
#include "helper/remote/ssh_endpoint_internal.hpp"
#include "protocol/shell_words.hpp"

namespace ferry::remote {
namespace {

using namespace std::chrono_literals;
using protocol::shell_quote;
using detail::unavailable;

std::expected<std::string, std::string> file_sha256(const std::filesystem::path& path, std::string* contents) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::unexpected("cannot read " + path.string());
  std::string data((std::istreambuf_iterator<char>(in)), {});
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < len; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  if (contents) *contents = std::move(data);
  return hex;
}

}  // namespace

std::string SshEndpoint::agent_file_name(const std::string& arch) const {
  auto it = agents_.find(arch);
  return "ferry-agent-" + arch + "-" + (it == agents_.end() ? std::string("missing") : it->second.hash.substr(0, 16));
}

std::expected<void, ResponseError> SshEndpoint::load_local_agents() {
  agents_missing_.clear();
  for (std::string_view a : kAgentArches) {
    const std::string arch(a);
    std::expected<std::filesystem::path, std::string> found =
        arch == native_arch() && !options_.agent_binary.empty() ? options_.agent_binary : find_agent_for_arch(arch);
    std::error_code ec;
    auto mtime = found ? std::filesystem::last_write_time(*found, ec) : std::filesystem::file_time_type{};
    if (found && ec) found = std::unexpected("cannot read " + found->string() + ": " + ec.message());
    if (!found) {
      agents_.erase(arch);
      agents_missing_[arch] = found.error();
      continue;
    }
    auto& known = agents_[arch];
    if (known.path == *found && known.mtime == mtime && !known.hash.empty()) continue;
    auto hash = file_sha256(*found, nullptr);
    if (!hash) {
      agents_.erase(arch);
      agents_missing_[arch] = hash.error();
      continue;
    }
    known = LocalAgent{*found, mtime, *hash};
  }
  if (agents_.empty()) return std::unexpected(unavailable(agents_missing_[std::string(native_arch())]));
  return {};
}

std::expected<std::string, ResponseError> SshEndpoint::install_agent(ssh::SshConnection& c, const std::string& abs_dir,
                                                                     const std::string& arch, Clock::time_point deadline) {
  auto left = [&] { return std::max<std::chrono::milliseconds>(1ms, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())); };
  auto local = agents_.find(arch);
  if (local == agents_.end()) return std::unexpected(unavailable("cannot install ferry-agent on " + description() + " (" + arch + "): " + agents_missing_[arch]));
  // Read whole only now (most connects find the agent installed); a build that changed since it
  // was hashed is hashed again, and the launch is rebuilt with its new name.
  std::string bytes;
  auto hash = file_sha256(local->second.path, &bytes);
  if (!hash) return std::unexpected(unavailable(hash.error()));
  local->second.hash = *hash;
  std::string target = abs_dir + "/" + agent_file_name(arch);
  // Upload under a name no other helper uses, verify, then rename over the old one: two helpers
  // installing at once each rename a complete, identical file.
  std::string tmp = abs_dir + "/" + posix::temp_name(agent_file_name(arch));
  spdlog::info("installing ferry-agent {} ({}) at {}:{}", kVersion, arch, description(), target);
  // Through `cat` on an exec channel, not SFTP: every box has a shell and cat, while SFTP may be
  // switched off, and libssh2 1.10 spins inside sftp_init when the subsystem is refused.
  auto up = c.exec("umask 077 && cat > " + shell_quote(tmp), std::max<std::chrono::milliseconds>(left(), 60s), std::move(bytes));
  if (!up) return std::unexpected(unavailable("uploading ferry-agent to " + description() + ": " + up.error().message));
  if (up->exit_status != 0)
    return std::unexpected(unavailable("uploading ferry-agent to " + description() + " failed: " + up->err));
  // This arch's other builds in this version's directory go (a running one keeps its inode), and
  // so do names from before builds carried their arch; another arch's builds stay (a home shared
  // by x86-64 and aarch64 nodes keeps both). Helpers' dot-named temp files match no pattern.
  const std::string dir = shell_quote(abs_dir);
  std::string hex16;
  for (int i = 0; i < 16; ++i) hex16 += "[0-9a-f]";
  std::string finish = "T=" + shell_quote(tmp) + "; F=" + shell_quote(target) + "; if [ \"$(sha256sum \"$T\" | cut -c1-64)\" = " +
                       local->second.hash + " ]; then chmod 700 \"$T\" && mv -f \"$T\" \"$F\" && for O in " + dir + "/ferry-agent " +
                       dir + "/ferry-agent-" + hex16 + " " + dir + "/ferry-agent-" + arch + "-*; do [ \"$O\" = \"$F\" ] || rm -f \"$O\"; done; " +
                       "else rm -f \"$T\"; echo 'hash mismatch after upload' >&2; exit 1; fi";
  auto fin = c.exec(finish, left());
  if (!fin) return std::unexpected(unavailable("installing ferry-agent on " + description() + ": " + fin.error().message));
  if (fin->exit_status != 0)
    return std::unexpected(unavailable("installing ferry-agent on " + description() + " failed: " + fin->err));
  return target;
}

}  // namespace ferry::remote
