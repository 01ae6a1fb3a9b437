// Typed params and results of the LSP requests ferry serves beyond the lifecycle:
// textDocument/codeLens (CodeLensParams -> CodeLens[]) and workspace/executeCommand, in LSP's
// own shapes (LSP 3.17). The textDocument/* and workspace/* notifications are read field by
// field by their handlers (helper/server/lsp_methods.cpp), leniently, as LSP clients vary.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/json_reader.hpp"

namespace ferry::protocol {

using json = nlohmann::json;

namespace method {
inline constexpr std::string_view kCodeLens = "textDocument/codeLens";
inline constexpr std::string_view kExecuteCommand = "workspace/executeCommand";
}  // namespace method

struct TextDocumentIdentifier {
  std::string uri;
};

struct CodeLensParams {
  TextDocumentIdentifier text_document;
};
std::optional<DecodeError> from_json(const json& j, CodeLensParams& out, const std::string& ptr = "");
json to_json(const CodeLensParams& p);

struct Position {
  int line = 0;       // 0-based
  int character = 0;  // 0-based, UTF-16 code units
};

struct Range {
  Position start;
  Position end;
};

struct Command {
  std::string title;
  std::string command;
  json arguments;  // LSPAny[]; absent when null
};

struct CodeLens {
  Range range;
  std::optional<Command> command;  // ferry resolves every lens up front
};
json to_json(const CodeLens& lens);
std::optional<DecodeError> from_json(const json& j, CodeLens& out, const std::string& ptr = "");

struct CodeLensResult {
  std::vector<CodeLens> lenses;
};
json to_json(const CodeLensResult& r);  // the bare array LSP sends

// {command, arguments?}; arguments default to [].
struct ExecuteCommandParams {
  std::string command;
  json arguments = json::array();
};
std::optional<DecodeError> from_json(const json& j, ExecuteCommandParams& out, const std::string& ptr = "");
json to_json(const ExecuteCommandParams& p);

}  // namespace ferry::protocol
