// The standard LSP surface of `ferry serve`: ServerCapabilities, textDocument/didSave (sync on
// save, the same path as sync/fileSaved), didOpen/didChange/didClose (accepted, no text kept),
// workspace/didChangeWatchedFiles (changes made outside the editor), workspace folders, code
// lenses, workspace/executeCommand (lsp_commands.cpp), diagnostics for ferry.json and training
// configs, and server-made progress that the client can cancel.
#include <fstream>
#include <sstream>
#include <thread>

#include <spdlog/spdlog.h>

#include "helper/deploy/project_trust.hpp"
#include "helper/server/code_lens.hpp"
#include "helper/server/document_diagnostics.hpp"
#include "helper/server/lsp_params.hpp"
#include "helper/server/offered_folders.hpp"
#include "helper/server/server_state.hpp"
#include "protocol/file_uri.hpp"
#include "protocol/messages_lsp.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
namespace fs = std::filesystem;
using p::json;
using p::ResponseError;

namespace {

// The notifications' params are read field by field by each handler, skipping what is not as
// expected: any object is accepted here, so a client sending more than ferry reads is never
// refused. The requests take protocol/messages_lsp.hpp's types.
struct LspParams {
  json value;
};
std::optional<p::DecodeError> from_json(const json& j, LspParams& out, const std::string&) {
  if (!j.is_object()) return p::DecodeError{"", "expected an object"};
  out.value = j;
  return std::nullopt;
}

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return std::move(out).str();
}

// Publishes (or clears) the diagnostics of one document; only ferry.json and training configs
// get any, and a document that had some gets an empty list once fixed.
void publish_diagnostics(ServerState& s, const fs::path& path, std::string_view text) {
  const std::string uri = p::fs_path_to_file_uri(path);
  json list = document_diagnostics(path, text);
  {
    std::lock_guard lock(s.lsp_mutex);
    if (list.empty() && !s.diagnosed.contains(uri)) return;
    if (list.empty()) s.diagnosed.erase(uri);
    else s.diagnosed.insert(uri);
  }
  s.client.notify("textDocument/publishDiagnostics", json{{"uri", uri}, {"diagnostics", std::move(list)}});
}

void on_did_open(ServerState& s, const json& params) {
  auto path = document_path(params, "textDocument/didOpen");
  if (!path) return;
  const json& doc = params["textDocument"];
  if (path->extension() == ".json" && doc.contains("text") && doc["text"].is_string())
    publish_diagnostics(s, *path, doc["text"].get<std::string>());
}

void on_did_save(ServerState& s, const json& params) {
  auto path = document_path(params, "textDocument/didSave");
  if (!path) {
    spdlog::warn("{}", path.error().message);
    return;
  }
  s.sync->file_saved(path->string());
  // The text is only needed for diagnostics, and only JSON files get them.
  if (path->extension() != ".json") return;
  if (auto text = params.contains("text") && params["text"].is_string() ? std::optional(params["text"].get<std::string>())
                                                                       : read_text(*path))
    publish_diagnostics(s, *path, *text);
}

void on_watched_files(ServerState& s, const json& params) {
  if (!params.contains("changes") || !params["changes"].is_array()) return;
  for (const auto& change : params["changes"])
    if (change.is_object() && change.contains("uri") && change["uri"].is_string())
      s.sync->file_saved(change["uri"].get<std::string>());
}

void on_workspace_folders(ServerState& s, const json& params) {
  if (!params.contains("event") || !params["event"].is_object()) return;
  auto each = [&](const char* key, auto&& fn) {
    const json& event = params["event"];
    if (!event.contains(key) || !event[key].is_array()) return;
    for (const auto& f : event[key])
      if (f.is_object() && f.contains("uri") && f["uri"].is_string())
        if (auto path = p::file_uri_to_fs_path(f["uri"].get<std::string>())) fn(*path);
  };
  each("removed", [&](const fs::path& f) {
    s.workspace.remove_folder(f);
    if (auto file = deploy::find_project_file(f))
      if (auto link = s.sessions.current(file->parent_path())) link->close();
  });
  each("added", [&](const fs::path& f) { s.workspace.add_folder(f); });
}

// Whether another `ferry serve` serves the project (its lenses are that one's to show). A trusted
// project is claimed now, so of two servers started together the first to be asked keeps it.
bool served_elsewhere(ServerState& s, const deploy::ProjectConfig& config) {
  const bool trusted = deploy::TrustStore().check(config).trusted();
  return (trusted ? s.sessions.claims().claim(config.root) : s.sessions.claims().held_elsewhere(config.root)).has_value();
}

std::expected<p::CodeLensResult, ResponseError> code_lens(ServerState& s, const p::CodeLensParams& params) {
  auto path = p::file_uri_to_fs_path(params.text_document.uri);
  if (!path) return std::unexpected(ResponseError{p::error_code::kInvalidParams, std::string(p::method::kCodeLens) + ": " + path.error(), {}});
  auto text = read_text(*path);
  if (!text) return p::CodeLensResult{};
  const std::u8string name = path->filename().u8string();  // UTF-8 on Windows too (.string() is the ANSI page)
  const auto kind = document_kind(std::string(name.begin(), name.end()), *text);
  if (kind == DocumentKind::other) return p::CodeLensResult{};
  auto config = project_of_file(*path);
  if (!config) return p::CodeLensResult{};  // not in a ferry project: nothing to offer
  if (served_elsewhere(s, *config)) return p::CodeLensResult{};
  return p::CodeLensResult{to_lsp(code_lenses(kind, *text, p::fs_path_to_file_uri(*path), config->host))};
}

}  // namespace

json lsp_capabilities() {
  json commands = json::array();
  for (const auto& c : lsp_command_ids()) commands.push_back(c);
  return json{
      // Only saves matter (sync on save); open/close are accepted, changes are not sent.
      {"textDocumentSync", {{"openClose", true}, {"change", 0}, {"save", {{"includeText", false}}}}},
      {"codeLensProvider", {{"resolveProvider", false}}},
      {"executeCommandProvider", {{"commands", commands}, {"workDoneProgress", true}}},
      {"workspace", {{"workspaceFolders", {{"supported", true}, {"changeNotifications", true}}}}},
  };
}

void bind_lsp_methods(p::BindingTable& table, ServerState& state) {
  ServerState* s = &state;
  // didOpen and didSave run inline, in the order they came: a check of the opened text must
  // not land after (and so undo) the check of a save that followed it; only .json files are
  // checked, and they are small. The save also reaches the saver thread without a hop.
  table.notification<LspParams>("textDocument/didOpen",
                                [s](const LspParams& params, p::CallContext&) { on_did_open(*s, params.value); });
  table.notification<LspParams>("textDocument/didSave",
                                [s](const LspParams& params, p::CallContext&) { on_did_save(*s, params.value); });
  table.notification<LspParams>("textDocument/didChange", [](const LspParams&, p::CallContext&) {});
  table.notification<LspParams>("textDocument/didClose", [](const LspParams&, p::CallContext&) {});
  table.notification<LspParams>("workspace/didChangeWatchedFiles",
                                [s](const LspParams& params, p::CallContext&) { on_watched_files(*s, params.value); });
  table.notification<LspParams>("workspace/didChangeWorkspaceFolders",
                                [s](const LspParams& params, p::CallContext&) { on_workspace_folders(*s, params.value); });
  table.notification<LspParams>("workspace/didChangeConfiguration", [](const LspParams&, p::CallContext&) {});
  table.notification<LspParams>("window/workDoneProgress/cancel", [s](const LspParams& params, p::CallContext&) {
    const json& token = params.value.contains("token") ? params.value["token"] : json();
    if (token.is_string()) s->progress.cancel(token.get<std::string>());
  });
  table.request<p::CodeLensParams, p::CodeLensResult>(
      p::method::kCodeLens, [s](const p::CodeLensParams& params, p::CallContext&) { return code_lens(*s, params); },
      p::Execution::worker);
  // The result is LSP's LSPAny (each command answers its own shape, lsp_commands.cpp): json.
  table.request<p::ExecuteCommandParams, json>(
      p::method::kExecuteCommand,
      [s](const p::ExecuteCommandParams& params, p::CallContext& call) {
        return execute_command(*s, params.command, params.arguments, call);
      },
      p::Execution::worker);
}

namespace {

// Asks to create a ferry.json in a workspace folder that has none (nor any parent), once per
// folder whatever the answer (offered_folders.hpp); after that the folder costs nothing: a line in
// the log, no question, no link, no file.
void offer_project_file(ServerState& s) {
  if (s.options.project_dir) return;
  OfferedFolders offered;
  for (const auto& folder : s.workspace.folders()) {
    if (deploy::find_project_file(folder)) continue;
    const std::string idle = "ferry: no ferry.json in " + folder.string() + ": ferry stays idle here (`ferry init` makes one)";
    if (offered.offered(folder) || !offered.remember(folder)) {
      s.questions.log(MessageType::info, idle);
      continue;
    }
    const std::string create = "Create ferry.json";
    auto choice = s.questions.choose(MessageType::info,
                                     "ferry: no ferry.json in " + folder.string() +
                                         ". Create one for the local host (set \"host\" to your GPU box later)? "
                                         "Asked once for this folder; `ferry init` makes one any time.",
                                     {create, "No"}, {});
    if (!choice || *choice != create) {
      s.questions.log(MessageType::info, idle);
      continue;
    }
    const fs::path file = folder / deploy::kProjectFileName;
    std::error_code ec;
    if (fs::exists(file, ec)) continue;  // made meanwhile (by the person, or `ferry init`)
    auto config = deploy::starter_config("local", "", folder.filename().string());
    if (auto valid = deploy::parse_project(config, folder); !valid) {
      s.questions.show(MessageType::error, "ferry: cannot make a ferry.json for " + folder.string() + ": " +
                                               valid.error().to_string() + " (run ferry init --name NAME there)");
      continue;
    }
    bool written = false;
    {
      std::ofstream out(file);
      out << config.dump(2) << "\n";
      out.close();
      written = !out.fail();
    }
    if (written) {
      s.questions.show(MessageType::info, "ferry: wrote " + file.string());
      if (s.questions.traits().show_document)
        (void)s.client.call("window/showDocument",
                            json{{"uri", p::fs_path_to_file_uri(file)}, {"takeFocus", true},
                                 {"selection", {{"start", {{"line", 0}, {"character", 0}}}, {"end", {{"line", 0}, {"character", 0}}}}}},
                            std::chrono::seconds(10));
    } else {
      s.questions.show(MessageType::error, "ferry: cannot write " + file.string());
    }
  }
}

}  // namespace

void on_initialized(ServerState& s) {
  // Both wait for the client's answers, which this (the reading) thread must stay free to read.
  std::lock_guard lock(s.lsp_mutex);
  s.background.emplace_back([&s] {
    if (s.questions.traits().watched_files_registration) {
      json watchers = json::array({json{{"globPattern", "**/*"}}});
      auto r = s.client.call("client/registerCapability",
                             json{{"registrations", json::array({json{{"id", "ferry-watched-files"},
                                                                      {"method", "workspace/didChangeWatchedFiles"},
                                                                      {"registerOptions", {{"watchers", watchers}}}}})}},
                             std::chrono::seconds(10));
      if (!r) spdlog::info("no file watching from the client: {}", r.error().message);
    }
    offer_project_file(s);
  });
}

}  // namespace ferry::server
