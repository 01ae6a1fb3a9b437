// SshEndpoint's agent install: the local ferry-agent build read and hashed once, and its upload
// to the box when the box lacks that exact build (SFTP to a temp name, hash check, chmod, atomic
// rename over the old build, which a running agent keeps by its inode).
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include "common/temp_name.hpp"
#include "ferry/version.hpp"
#include "helper/remote/local_endpoint.hpp"
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

std::string SshEndpoint::agent_file_name() const { return "ferry-agent-" + agent_hash_.substr(0, 16); }

std::expected<void, ResponseError> SshEndpoint::load_local_agent() {
  std::filesystem::path local = options_.agent_binary;
  if (local.empty()) {
    auto found = find_agent_binary();
    if (!found) return std::unexpected(unavailable(found.error()));
    local = *found;
  }
  std::error_code ec;
  auto mtime = std::filesystem::last_write_time(local, ec);
  if (local == agent_path_ && !ec && mtime == agent_mtime_ && !agent_hash_.empty()) return {};
  auto hash = file_sha256(local, &agent_bytes_);
  if (!hash) return std::unexpected(unavailable(hash.error()));
  agent_hash_ = *hash;
  agent_path_ = local;
  agent_mtime_ = mtime;
  return {};
}

std::expected<std::string, ResponseError> SshEndpoint::install_agent(ssh::SshConnection& c, const std::string& abs_dir,
                                                                     Clock::time_point deadline) {
  auto left = [&] { return std::max<std::chrono::milliseconds>(1ms, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now())); };
  std::string target = abs_dir + "/" + agent_file_name();
  // Upload under a name no other helper uses, verify, then rename over the old one: two helpers
  // installing at once each rename a complete, identical file.
  std::string tmp = abs_dir + "/" + posix::temp_name(agent_file_name());
  spdlog::info("installing ferry-agent {} at {}:{}", kVersion, description(), target);
  auto up = c.write_file(tmp, agent_bytes_, 0700, std::max<std::chrono::milliseconds>(left(), 60s));
  if (!up) return std::unexpected(unavailable("uploading ferry-agent to " + description() + ": " + up.error().message));
  // Other builds' agents in this version's directory go (a running one keeps its inode); the
  // dot-named temp files of helpers installing right now do not match the pattern.
  std::string finish = "T=" + shell_quote(tmp) + "; F=" + shell_quote(target) + "; if [ \"$(sha256sum \"$T\" | cut -c1-64)\" = " +
                       agent_hash_ + " ]; then chmod 700 \"$T\" && mv -f \"$T\" \"$F\" && for O in " + shell_quote(abs_dir) +
                       "/ferry-agent " + shell_quote(abs_dir) + "/ferry-agent-*; do [ \"$O\" = \"$F\" ] || rm -f \"$O\"; done; " +
                       "else rm -f \"$T\"; echo 'hash mismatch after upload' >&2; exit 1; fi";
  auto fin = c.exec(finish, left());
  if (!fin) return std::unexpected(unavailable("installing ferry-agent on " + description() + ": " + fin.error().message));
  if (fin->exit_status != 0)
    return std::unexpected(unavailable("installing ferry-agent on " + description() + " failed: " + fin->err));
  return target;
}

}  // namespace ferry::remote
