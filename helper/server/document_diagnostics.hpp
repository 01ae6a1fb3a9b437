// LSP diagnostics for the documents ferry checks (ferry.json, training configs): the checks of
// helper/diagnostics as textDocument/publishDiagnostics' Diagnostic objects; an empty array for
// anything else or a clean file.
#pragma once

#include <filesystem>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ferry::server {

nlohmann::json document_diagnostics(const std::filesystem::path& file, std::string_view text);

}  // namespace ferry::server
