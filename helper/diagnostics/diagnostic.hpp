// What an editor shows for a file: LSP diagnostics (textDocument/publishDiagnostics) with
// positions in LSP's default encoding, and their JSON form.
#pragma once

#include <compare>
#include <string>

#include <nlohmann/json.hpp>

namespace ferry::diagnostics {

// 0-based line and character; character counts UTF-16 code units (LSP's default position
// encoding): an emoji is 2, "é" is 1, whatever its UTF-8 length.
struct TextPosition {
  int line = 0;
  int character = 0;
  friend auto operator<=>(const TextPosition&, const TextPosition&) = default;
};

struct TextRange {
  TextPosition start, end;  // end is exclusive
  friend auto operator<=>(const TextRange&, const TextRange&) = default;
};

enum class Severity { error = 1, warning = 2, information = 3, hint = 4 };  // LSP's DiagnosticSeverity

struct Diagnostic {
  TextRange range;
  Severity severity = Severity::error;
  std::string message;
  std::string code;     // "json", "schema", "ferry.unknownHost", ...
  std::string pointer;  // the JSON pointer it is about; "" for the document or a syntax error
};

// LSP's Diagnostic object: range, severity, code, source "ferry", message, data.pointer.
nlohmann::json to_lsp_json(const Diagnostic& d);

}  // namespace ferry::diagnostics
