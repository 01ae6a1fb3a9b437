// Diagnostics as LSP objects: see document_diagnostics.hpp.
#include "helper/server/document_diagnostics.hpp"

namespace ferry::server {

nlohmann::json document_diagnostics(const std::filesystem::path&, std::string_view) {
  return nlohmann::json::array();  // wired to helper/diagnostics when it lands
}

}  // namespace ferry::server
