// Typed Params/Result structs for every IDE-wire method, with to_json/from_json beside each.
// from_json validates untrusted input and names the JSON pointer of the first bad field;
// to_json writes the wire shape documented in protocol/spec/protocol.md. This file holds the
// lifecycle, project and host methods; each area of ferry's own has its file, included below.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/json_reader.hpp"
#include "protocol/messages_cost.hpp"
#include "protocol/messages_env.hpp"
#include "protocol/messages_gpu.hpp"
#include "protocol/messages_host.hpp"
#include "protocol/messages_lsp.hpp"
#include "protocol/messages_project.hpp"
#include "protocol/messages_run.hpp"
#include "protocol/messages_sync.hpp"
#include "protocol/messages_train.hpp"
#include "protocol/messages_tunnel.hpp"

namespace ferry::protocol {

using json = nlohmann::json;

// Method names: the one list the server binds and the docs describe.
namespace method {
inline constexpr std::string_view kInitialize = "initialize";
inline constexpr std::string_view kInitialized = "initialized";
inline constexpr std::string_view kShutdown = "shutdown";
inline constexpr std::string_view kExit = "exit";
inline constexpr std::string_view kCancelRequest = "$/cancelRequest";
inline constexpr std::string_view kSetTrace = "$/setTrace";
inline constexpr std::string_view kProgress = "$/progress";
inline constexpr std::string_view kProjectLoad = "project/load";
inline constexpr std::string_view kHostConnect = "host/connect";
inline constexpr std::string_view kHostStateChanged = "host/stateChanged";      // server -> client notification
inline constexpr std::string_view kHostConfirmHostKey = "host/confirmHostKey";  // server -> client request
inline constexpr std::string_view kHostPassphrase = "host/passphrase";          // server -> client request
inline constexpr std::string_view kDoctorRun = "doctor/run";
inline constexpr std::string_view kPing = "ferry/ping";
inline constexpr std::string_view kTestSleep = "ferry/testSleep";  // only with --test-methods
inline constexpr std::string_view kTestConfirmHostKey = "ferry/testConfirmHostKey";  // only with --test-methods
}  // namespace method
inline constexpr std::string_view kProgressMethod = method::kProgress;

// Params of methods that take none; any object (or nothing) is accepted.
struct EmptyParams {};
std::optional<DecodeError> from_json(const json& j, EmptyParams& out, const std::string& ptr = "");

// Results that are JSON null (shutdown).
struct NullResult {};
json to_json(const NullResult&);

struct EmptyResult {};
json to_json(const EmptyResult&);

// --- lifecycle -------------------------------------------------------------------------

struct ClientInfo {
  std::string name;
  std::optional<std::string> version;
};
std::optional<DecodeError> from_json(const json& j, ClientInfo& out, const std::string& ptr = "");

struct InitializeParams {
  std::optional<std::int64_t> process_id;  // processId: integer | null
  std::optional<ClientInfo> client_info;
  std::optional<std::string> root_uri;
  std::optional<std::string> root_path;
  json capabilities = json::object();
  std::optional<std::string> trace;  // "off" | "messages" | "verbose"
  json initialization_options;       // passed through
  json workspace_folders;            // [{uri, name}] | null, as sent
};
std::optional<DecodeError> from_json(const json& j, InitializeParams& out, const std::string& ptr = "");

struct ServerInfo {
  std::string name = "ferry";
  std::string version;
};
json to_json(const ServerInfo& s);

struct InitializeResult {
  ServerInfo server_info;
  json capabilities = json::object();  // LSP's ServerCapabilities (textDocumentSync, codeLensProvider, ...)
  std::vector<std::string> methods;    // ferry's: every request and notification the server accepts
};
json to_json(const InitializeResult& r);

struct SetTraceParams {
  std::string value;  // "off" | "messages" | "verbose"
};
std::optional<DecodeError> from_json(const json& j, SetTraceParams& out, const std::string& ptr = "");

struct CancelParams {
  json id;  // integer | string
};
std::optional<DecodeError> from_json(const json& j, CancelParams& out, const std::string& ptr = "");
json to_json(const CancelParams& p);

// --- progress --------------------------------------------------------------------------

struct ProgressParams {
  json token;  // integer | string
  json value;
};
json to_json(const ProgressParams& p);
std::optional<DecodeError> from_json(const json& j, ProgressParams& out, const std::string& ptr = "");

struct WorkDoneProgressBegin {
  std::string title;
  std::optional<std::string> message;
  std::optional<int> percentage;
  bool cancellable = true;
};
json to_json(const WorkDoneProgressBegin& b);

struct WorkDoneProgressReport {
  std::optional<std::string> message;
  std::optional<int> percentage;
};
json to_json(const WorkDoneProgressReport& r);

struct WorkDoneProgressEnd {
  std::optional<std::string> message;
};
json to_json(const WorkDoneProgressEnd& e);

// A request's optional `workDoneToken`: integer | string.
std::optional<DecodeError> read_work_done_token(const json& params, json& token);

// --- project and host ------------------------------------------------------------------

struct ProjectLoadParams {
  std::optional<std::string> path;  // a ferry.json or a directory; default: --project or walk up from the cwd
};
std::optional<DecodeError> from_json(const json& j, ProjectLoadParams& out, const std::string& ptr = "");
json to_json(const ProjectLoadParams& p);

struct HostConnectParams {
  std::optional<std::string> path;  // the project, as for project/load
};
std::optional<DecodeError> from_json(const json& j, HostConnectParams& out, const std::string& ptr = "");

struct HostConnectResult {
  std::string host;
  std::string agent_version;
  int protocol_version = 0;
  std::string remote_root;
  std::string os;    // "linux", ... ("" when the agent did not say)
  std::string arch;  // "x86_64", ...
};
json to_json(const HostConnectResult& r);

// doctor/run: checks the project's host, or `host` (an ssh alias, user@host:port or "local").
struct DoctorRunParams {
  std::optional<std::string> path;  // the project, as for project/load
  std::optional<std::string> host;
};
std::optional<DecodeError> from_json(const json& j, DoctorRunParams& out, const std::string& ptr = "");

struct DoctorCheckLine {
  std::string check;
  std::string status;  // "pass", "warn", "fail"
  std::string detail;
  std::string fix;
};
struct DoctorRunResult {
  std::string host;
  std::vector<DoctorCheckLine> checks;
};
json to_json(const DoctorRunResult& r);

// Server -> client: an unknown host key; the client shows the fingerprint and answers.
struct ConfirmHostKeyParams {
  std::string host;
  std::string key_type;
  std::string fingerprint;
};
json to_json(const ConfirmHostKeyParams& p);
std::optional<DecodeError> from_json(const json& j, ConfirmHostKeyParams& out, const std::string& ptr = "");
struct ConfirmHostKeyResult {
  bool accept = false;
};
std::optional<DecodeError> from_json(const json& j, ConfirmHostKeyResult& out, const std::string& ptr = "");

// Server -> client: the passphrase of an encrypted key; absent = skip that key.
struct PassphraseParams {
  std::string key_file;
};
json to_json(const PassphraseParams& p);
struct PassphraseResult {
  std::optional<std::string> passphrase;
};
std::optional<DecodeError> from_json(const json& j, PassphraseResult& out, const std::string& ptr = "");

// --- ferry's own -----------------------------------------------------------------------

struct PingParams {
  json payload;  // echoed back; lets benchmarks vary the body size
};
std::optional<DecodeError> from_json(const json& j, PingParams& out, const std::string& ptr = "");

struct PingResult {
  json payload;
};
json to_json(const PingResult& r);

inline constexpr std::int64_t kMaxTestSleepMs = 600'000;

struct TestSleepParams {
  std::int64_t ms = 0;     // 0 .. kMaxTestSleepMs
  int steps = 4;           // progress reports while sleeping, 1 .. 100
};
std::optional<DecodeError> from_json(const json& j, TestSleepParams& out, const std::string& ptr = "");

struct TestSleepResult {
  std::int64_t slept_ms = 0;
};
json to_json(const TestSleepResult& r);

}  // namespace ferry::protocol
