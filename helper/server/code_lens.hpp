// The code lenses ferry puts in a document, worked out from its saved text alone: "▶ Run on
// HOST" and "Debug on HOST" above a Python file's `if __name__ == "__main__":`, "Train on HOST"
// at the top of a training config, "Sync now" and "Doctor" in ferry.json, and one lens per
// ferry.json launch entry on its line ("▶ Run NAME on HOST", "Debug NAME ...", "Train NAME ...").
// Each names a workspace/executeCommand command with the file's URI (and the entry's name) as
// its argument.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/messages_lsp.hpp"

namespace ferry::server {

enum class DocumentKind { other, python, project_file, train_config };

// By name and (for JSON) content: ferry.json, a training config (diagnostics'
// looks_like_train_config), a .py file.
DocumentKind document_kind(std::string_view file_name, std::string_view text);

struct CodeLens {
  int line = 0;  // 0-based; the lens spans the line's first character
  std::string title;
  std::string command;
  nlohmann::json arguments = nlohmann::json::array();
};

std::vector<CodeLens> code_lenses(DocumentKind kind, std::string_view text, const std::string& uri,
                                  const std::string& host);

// LSP's CodeLens objects (textDocument/codeLens's result), and that result's JSON.
std::vector<protocol::CodeLens> to_lsp(const std::vector<CodeLens>& lenses);
nlohmann::json to_json(const std::vector<CodeLens>& lenses);

}  // namespace ferry::server
