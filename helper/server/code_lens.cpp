// Code lenses from a document's text: see code_lens.hpp.
#include "helper/server/code_lens.hpp"

#include <algorithm>
#include <regex>

#include "helper/diagnostics/config_diagnostics.hpp"
#include "helper/diagnostics/json_locator.hpp"
#include "protocol/json_parse.hpp"

namespace ferry::server {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view base_name(std::string_view path) {
  auto slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Lines of the main guard, either way round, with either quote.
std::vector<int> main_guard_lines(std::string_view text) {
  static const std::regex kGuard(
      R"(^if\s+(__name__\s*==\s*(['"])__main__\2|(['"])__main__\3\s*==\s*__name__)\s*:)");
  std::vector<int> lines;
  int line = 0;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find('\n', start);
    std::string_view l = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    // std::regex recurses per character: a line of 300,000 blanks in an untrusted project's file
    // overflowed the stack. No real guard line is longer than this.
    constexpr std::size_t kMaxGuardLine = 1024;
    if (l.starts_with("if") && l.size() <= kMaxGuardLine && std::regex_search(std::string(l), kGuard))
      lines.push_back(line);
    if (end == std::string_view::npos) break;
    start = end + 1;
    ++line;
  }
  return lines;
}

// ferry.json's launch entries, each a lens on its own line: the kind's command with the entry's
// name (what `ferry run --launch NAME` starts).
void launch_lenses(std::string_view text, const std::string& uri, const std::string& host, std::vector<CodeLens>& out) {
  const auto parsed = protocol::parse_json_text(text);
  if (!parsed) return;
  const nlohmann::json& doc = *parsed;
  if (!doc.is_object() || !doc.contains("launch") || !doc["launch"].is_array()) return;
  const auto where = diagnostics::JsonLocations::scan(text);
  for (std::size_t i = 0; i < doc["launch"].size(); ++i) {
    const auto& entry = doc["launch"][i];
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string()) continue;
    const std::string name = entry["name"];
    const std::string kind = entry.contains("kind") && entry["kind"].is_string() ? entry["kind"].get<std::string>() : "run";
    const auto* span = where.find("/launch/" + std::to_string(i));
    if (!span) continue;
    const int line = static_cast<int>(std::count(text.begin(), text.begin() + span->value.begin, '\n'));
    const nlohmann::json args = nlohmann::json::array({{{"uri", uri}, {"launch", name}}});
    if (kind == "train") out.push_back({line, "Train " + name + " on " + host, "ferry.train", args});
    else if (kind == "debug") out.push_back({line, "Debug " + name + " on " + host, "ferry.debug", args});
    else out.push_back({line, "\u25B6 Run " + name + " on " + host, "ferry.run", args});
  }
}

}  // namespace

DocumentKind document_kind(std::string_view file_name, std::string_view text) {
  const auto name = base_name(file_name);
  if (name == "ferry.json") return DocumentKind::project_file;
  if (ends_with(name, ".py")) return DocumentKind::python;
  if (ends_with(name, ".json") && diagnostics::looks_like_train_config(text)) return DocumentKind::train_config;
  return DocumentKind::other;
}

std::vector<CodeLens> code_lenses(DocumentKind kind, std::string_view text, const std::string& uri,
                                  const std::string& host) {
  std::vector<CodeLens> out;
  const nlohmann::json args = nlohmann::json::array({uri});
  switch (kind) {
    case DocumentKind::python:
      for (int line : main_guard_lines(text)) {
        out.push_back({line, "\u25B6 Run on " + host, "ferry.run", args});
        out.push_back({line, "Debug on " + host, "ferry.debug", args});
      }
      break;
    case DocumentKind::train_config:
      out.push_back({0, "Train on " + host, "ferry.train", args});
      break;
    case DocumentKind::project_file:
      out.push_back({0, "Sync now", "ferry.sync", args});
      out.push_back({0, "Doctor", "ferry.doctor", args});
      launch_lenses(text, uri, host, out);
      break;
    case DocumentKind::other:
      break;
  }
  return out;
}

std::vector<protocol::CodeLens> to_lsp(const std::vector<CodeLens>& lenses) {
  std::vector<protocol::CodeLens> out;
  for (const auto& l : lenses) {
    const protocol::Position at{l.line, 0};
    out.push_back({{at, at}, protocol::Command{l.title, l.command, l.arguments}});
  }
  return out;
}

nlohmann::json to_json(const std::vector<CodeLens>& lenses) { return protocol::to_json(protocol::CodeLensResult{to_lsp(lenses)}); }

}  // namespace ferry::server
