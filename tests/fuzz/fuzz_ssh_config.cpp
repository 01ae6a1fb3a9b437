// Fuzzes the OpenSSH client config resolver and the known_hosts parser, both of which read files
// the user (or a provider's setup script) wrote: neither may crash, hang or read out of bounds,
// and a parsed known_hosts entry must round-trip its fingerprint.
//
// Input: a selector byte (bit 0: also treat the rest as known_hosts), a destination line, then the
// file body. The body is written to a per-process temp file because both parsers read files.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "helper/ssh/known_hosts.hpp"
#include "helper/ssh/ssh_config.hpp"

using namespace ferry::ssh;

namespace {

std::filesystem::path scratch_dir() {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("ferry-fuzz-ssh-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d / ".ssh");
    return d;
  }();
  return dir;
}

void write_file(const std::filesystem::path& path, std::string_view body) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(body.data(), static_cast<std::streamsize>(body.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 8192) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const bool known_hosts_too = (input[0] & 1) != 0;
  std::string_view rest = input.substr(1);
  const std::size_t nl = rest.find('\n');
  const std::string_view dest_text = nl == std::string_view::npos ? rest : rest.substr(0, nl);
  const std::string_view body = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);

  const auto dir = scratch_dir();
  const auto config = dir / ".ssh" / "config";
  write_file(config, body);

  LocalContext local{"fuzzer", dir};
  // Include directives may point at the config itself; the resolver must bound its recursion.
  if (auto dest = parse_destination(dest_text)) {
    if (dest->host.find('\0') == std::string::npos) {
      auto resolved = resolve_host(*dest, config, local, true);
      if (resolved) (void)describe(*resolved);
      else (void)resolved.error().to_string();
    }
  }
  (void)match_pattern(dest_text, "example.com");

  if (known_hosts_too) {
    const auto kh = dir / ".ssh" / "known_hosts";
    write_file(kh, body);
    for (const auto& entry : read_known_hosts(kh)) {
      if (entry.key.blob.empty()) continue;
      const auto fp = sha256_fingerprint(entry.key.blob);
      if (!fp.starts_with("SHA256:")) std::abort();
      (void)host_field_matches(entry.hosts, "example.com");
      (void)host_field_matches(entry.hosts, "[127.0.0.1]:2222");
      const auto again = base64_decode(base64_encode(entry.key.blob));
      if (!again || *again != entry.key.blob) std::abort();
    }
    (void)check_host_key({kh}, "example.com", 22, PublicKey{"ssh-ed25519", {1, 2, 3}});
  }
  return 0;
}
