// Fuzzes what `ferry serve`'s LSP side reads out of a client's messages before it acts: the
// input is one JSON-RPC message; its document URI (odd characters, bad escapes, other schemes),
// its command arguments (missing, mistyped, unknown commands), and for didOpen the document text
// go through the same functions the server's handlers call (document_path, command_target,
// document_kind, code_lenses, document_diagnostics). Every lens and diagnostic must serialise.
// (The server's whole binding table cannot be built here: ferry_ssh's Asio coroutines do not
// compile with clang-19 and Boost 1.74; the transcripts and test_lsp_surface cover dispatch.)
#include <cstddef>
#include <cstdint>
#include <string>

#include "helper/server/code_lens.hpp"
#include "helper/server/document_diagnostics.hpp"
#include "helper/server/lsp_params.hpp"
#include "protocol/file_uri.hpp"

using ferry::protocol::json;
namespace srv = ferry::server;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  json m = json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded() || !m.is_object()) return 0;
  const std::string method = m.contains("method") && m["method"].is_string() ? m["method"].get<std::string>() : "";
  const json params = m.contains("params") ? m["params"] : json();
  if (method == "workspace/executeCommand") {
    const std::string command = params.is_object() && params.contains("command") && params["command"].is_string()
                                    ? params["command"].get<std::string>()
                                    : std::string("?");
    auto target = srv::command_target(command, params.is_object() && params.contains("arguments") ? params["arguments"] : json());
    if (target && target->file) {
      // A path that came from a URI goes back to one the client could open.
      auto uri = ferry::protocol::path_to_file_uri(target->file->string());
      auto back = ferry::protocol::file_uri_to_path(uri);
      if (!back || *back != target->file->string()) __builtin_trap();
    }
    return 0;
  }
  auto path = srv::document_path(params, method);
  if (!path) return 0;
  std::string text;
  if (params["textDocument"].contains("text") && params["textDocument"]["text"].is_string())
    text = params["textDocument"]["text"].get<std::string>();
  const auto kind = srv::document_kind(path->filename().string(), text);
  auto lenses = srv::to_json(srv::code_lenses(kind, text, ferry::protocol::path_to_file_uri(path->string()), "box"));
  auto diagnostics = srv::document_diagnostics(*path, text);
  (void)lenses.dump(-1, ' ', false, json::error_handler_t::strict);
  (void)diagnostics.dump(-1, ' ', false, json::error_handler_t::replace);
  return 0;
}
