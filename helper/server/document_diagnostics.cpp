// Diagnostics as LSP objects: see document_diagnostics.hpp.
#include "helper/server/document_diagnostics.hpp"

#include "helper/diagnostics/config_diagnostics.hpp"
#include "helper/server/code_lens.hpp"

namespace ferry::server {

nlohmann::json document_diagnostics(const std::filesystem::path& file, std::string_view text) {
  std::vector<diagnostics::Diagnostic> found;
  switch (document_kind(file.filename().string(), text)) {
    case DocumentKind::project_file: found = diagnostics::diagnose_project_file(text, file); break;
    case DocumentKind::train_config: found = diagnostics::diagnose_train_config(text); break;
    default: break;
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& d : found) out.push_back(diagnostics::to_lsp_json(d));
  return out;
}

}  // namespace ferry::server
