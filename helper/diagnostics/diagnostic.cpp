// LSP JSON for diagnostics: see diagnostic.hpp.
#include "helper/diagnostics/diagnostic.hpp"

namespace ferry::diagnostics {
namespace {

nlohmann::json position_json(const TextPosition& p) { return {{"line", p.line}, {"character", p.character}}; }

}  // namespace

nlohmann::json to_lsp_json(const Diagnostic& d) {
  return {{"range", {{"start", position_json(d.range.start)}, {"end", position_json(d.range.end)}}},
          {"severity", static_cast<int>(d.severity)},
          {"code", d.code},
          {"source", "ferry"},
          {"message", d.message},
          {"data", {{"pointer", d.pointer}}}};
}

}  // namespace ferry::diagnostics
