// Stand-ins for the SSH agents of Windows, for test_windows_cli: the agent protocol
// (draft-miller-ssh-agent: list identities, sign) with the one unencrypted ed25519 key in the
// OpenSSH key file it is given, served on \\.\pipe\openssh-ssh-agent (the pipe Windows'
// ssh-agent service listens on) or, with --pageant, as Pageant (a window of class and title
// "Pageant" answering WM_COPYDATA requests in a named file mapping, as PuTTY's agent does).
// Windows only (built by the Windows shape, run under Wine); prints "ready" once it can be found
// and serves until killed.
//   windows_ssh_agent.exe [--pageant] KEY_FILE
#include <windows.h>

#include <openssl/evp.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

namespace {

// SSH wire reading and writing: uint32 big-endian lengths, strings as length + bytes.
struct Reader {
  std::string data;
  std::size_t at = 0;
  std::uint32_t u32() {
    if (at + 4 > data.size()) throw std::runtime_error("short");
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(data[at++]);
    return v;
  }
  std::string str() {
    const std::uint32_t n = u32();
    if (at + n > data.size()) throw std::runtime_error("short");
    std::string s = data.substr(at, n);
    at += n;
    return s;
  }
};

std::string u32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}
std::string str(const std::string& s) { return u32(static_cast<std::uint32_t>(s.size())) + s; }

std::string base64_decode(const std::string& text) {
  std::string out(text.size(), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) throw std::runtime_error("bad base64");
  std::size_t pad = 0;
  for (auto it = text.rbegin(); it != text.rend() && *it == '='; ++it) ++pad;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

struct Key {
  std::string public_blob;  // string "ssh-ed25519", string pk(32)
  std::string seed;         // the 32-byte private seed
  std::string comment;
};

// The openssh-key-v1 format, unencrypted, one ed25519 key (what ssh-keygen -N '' writes).
Key read_key(const std::string& path) {
  std::ifstream in(path);
  std::string line, b64;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '-') b64 += line;
  Reader r{base64_decode(b64)};
  if (r.data.compare(0, 15, std::string("openssh-key-v1\0", 15)) != 0) throw std::runtime_error("not an OpenSSH key");
  r.at = 15;
  if (r.str() != "none") throw std::runtime_error("encrypted key");
  r.str();  // kdf name
  r.str();  // kdf options
  if (r.u32() != 1) throw std::runtime_error("one key expected");
  Key k;
  k.public_blob = r.str();
  Reader priv{r.str()};
  priv.u32();
  priv.u32();  // check ints
  if (priv.str() != "ssh-ed25519") throw std::runtime_error("ed25519 expected");
  priv.str();  // public key
  k.seed = priv.str().substr(0, 32);
  k.comment = priv.str();
  return k;
}

std::string sign(const Key& k, const std::string& data) {
  EVP_PKEY* pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nullptr, reinterpret_cast<const unsigned char*>(k.seed.data()), 32);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned char sig[64];
  std::size_t len = sizeof sig;
  const bool ok = pkey && ctx && EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, pkey) == 1 &&
                  EVP_DigestSign(ctx, sig, &len, reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(pkey);
  if (!ok) return {};
  return str("ssh-ed25519") + str(std::string(reinterpret_cast<char*>(sig), len));
}

// One request's answer: identities (11 -> 12), sign (13 -> 14), anything else failure (5).
std::string answer(const Key& k, const std::string& request) {
  if (request.empty()) return std::string(1, 5);
  if (request[0] == 11) return std::string(1, 12) + u32(1) + str(k.public_blob) + str(k.comment);
  if (request[0] == 13) {
    Reader r{request.substr(1)};
    const std::string blob = r.str();
    const std::string data = r.str();
    if (blob != k.public_blob) return std::string(1, 5);
    const std::string signature = sign(k, data);
    return signature.empty() ? std::string(1, 5) : std::string(1, 14) + str(signature);
  }
  return std::string(1, 5);
}

bool read_exactly(HANDLE pipe, char* out, DWORD n) {
  for (DWORD done = 0; done < n;) {
    DWORD got = 0;
    if (!::ReadFile(pipe, out + done, n - done, &got, nullptr) || got == 0) return false;
    done += got;
  }
  return true;
}

void serve(HANDLE pipe, const Key& k) {
  for (;;) {
    char head[4];
    if (!read_exactly(pipe, head, 4)) break;
    const std::uint32_t n = Reader{std::string(head, 4)}.u32();
    if (n > (1u << 20)) break;
    std::string request(n, '\0');
    if (!read_exactly(pipe, request.data(), n)) break;
    const std::string reply = str(answer(k, request));
    DWORD put = 0;
    if (!::WriteFile(pipe, reply.data(), static_cast<DWORD>(reply.size()), &put, nullptr)) break;
  }
  ::DisconnectNamedPipe(pipe);
  ::CloseHandle(pipe);
}

// Pageant's side of WM_COPYDATA: the request (uint32 length + body) in the file mapping the
// message names, the reply written over it; nonzero for answered.
constexpr ULONG_PTR kPageantCopyDataId = 0x804e50ba;
constexpr std::size_t kPageantMaxMessage = 8192;
const Key* g_pageant_key = nullptr;

LRESULT CALLBACK pageant_window(HWND hwnd, UINT message, WPARAM wparam, LPARAM lparam) {
  if (message != WM_COPYDATA) return ::DefWindowProcA(hwnd, message, wparam, lparam);
  const auto* cds = reinterpret_cast<const COPYDATASTRUCT*>(lparam);
  if (cds->dwData != kPageantCopyDataId || cds->cbData == 0) return 0;
  const std::string name(static_cast<const char*>(cds->lpData), cds->cbData - 1);
  HANDLE map = ::OpenFileMappingA(FILE_MAP_ALL_ACCESS, FALSE, name.c_str());
  if (!map) return 0;
  auto* view = static_cast<char*>(::MapViewOfFile(map, FILE_MAP_WRITE, 0, 0, 0));
  LRESULT answered = 0;
  if (view) {
    const std::uint32_t n = Reader{std::string(view, 4)}.u32();
    if (n + 4 <= kPageantMaxMessage) {
      const std::string reply = str(answer(*g_pageant_key, std::string(view + 4, n)));
      if (reply.size() <= kPageantMaxMessage) {
        std::memcpy(view, reply.data(), reply.size());
        answered = 1;
      }
    }
    ::UnmapViewOfFile(view);
  }
  ::CloseHandle(map);
  return answered;
}

int serve_as_pageant(const Key& key) {
  g_pageant_key = &key;
  WNDCLASSA wc{};
  wc.lpfnWndProc = pageant_window;
  wc.hInstance = ::GetModuleHandleA(nullptr);
  wc.lpszClassName = "Pageant";
  if (!::RegisterClassA(&wc)) return 1;
  // A hidden top-level window: FindWindowA does not see message-only ones.
  if (!::CreateWindowA("Pageant", "Pageant", 0, 0, 0, 0, 0, nullptr, nullptr, wc.hInstance, nullptr)) return 1;
  std::printf("ready\n");
  std::fflush(stdout);
  MSG msg;
  while (::GetMessageA(&msg, nullptr, 0, 0) > 0) ::DispatchMessageA(&msg);
  return 0;
}

HANDLE new_instance() {
  return ::CreateNamedPipeW(L"\\\\.\\pipe\\openssh-ssh-agent", PIPE_ACCESS_DUPLEX, PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT,
                            PIPE_UNLIMITED_INSTANCES, 65536, 65536, 0, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  const bool pageant = argc == 3 && std::string(argv[1]) == "--pageant";
  if (argc != 2 && !pageant) {
    std::fprintf(stderr, "usage: windows_ssh_agent.exe [--pageant] KEY_FILE\n");
    return 2;
  }
  const char* key_file = argv[argc - 1];
  Key key;
  try {
    key = read_key(key_file);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "windows_ssh_agent: %s: %s\n", key_file, e.what());
    return 1;
  }
  if (pageant) return serve_as_pageant(key);
  HANDLE pipe = new_instance();
  if (pipe == INVALID_HANDLE_VALUE) {
    std::fprintf(stderr, "windows_ssh_agent: cannot create the pipe (%lu)\n", ::GetLastError());
    return 1;
  }
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) {
    if (!::ConnectNamedPipe(pipe, nullptr) && ::GetLastError() != ERROR_PIPE_CONNECTED) {
      ::CloseHandle(pipe);
    } else {
      std::thread([pipe, &key] { serve(pipe, key); }).detach();
    }
    pipe = new_instance();
    if (pipe == INVALID_HANDLE_VALUE) return 1;
  }
}
