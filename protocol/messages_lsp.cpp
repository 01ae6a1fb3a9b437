// Typed textDocument/codeLens and workspace/executeCommand messages: see messages_lsp.hpp.
#include "protocol/messages_lsp.hpp"

namespace ferry::protocol {

namespace {

json to_json(const Position& p) { return {{"line", p.line}, {"character", p.character}}; }

std::optional<DecodeError> from_json(const json& j, Position& out, const std::string& ptr) {
  ObjectReader r(j, ptr);
  r.required("line", out.line);
  r.required("character", out.character);
  return r.error();
}

std::optional<DecodeError> read_range(const json& j, Range& out, const std::string& ptr) {
  if (!j.is_object()) return DecodeError{ptr, "expected {start, end}"};
  for (auto [key, field] : {std::pair{"start", &out.start}, std::pair{"end", &out.end}}) {
    const std::string at = pointer_append(ptr, key);
    if (!j.contains(key)) return DecodeError{at, "is required"};
    if (auto e = from_json(j[key], *field, at)) return e;
  }
  return std::nullopt;
}

}  // namespace

// The pointer names the uri for every shape short of one (what clients get wrong is the URI).
std::optional<DecodeError> from_json(const json& j, CodeLensParams& out, const std::string& ptr) {
  if (!j.is_object()) return DecodeError{ptr, "expected an object"};
  const auto doc = j.find("textDocument");
  if (doc == j.end() || !doc->is_object() || !doc->contains("uri") || !(*doc)["uri"].is_string())
    return DecodeError{ptr + "/textDocument/uri", "expected a string"};
  out.text_document.uri = (*doc)["uri"].get<std::string>();
  return std::nullopt;
}

json to_json(const CodeLensParams& p) { return {{"textDocument", {{"uri", p.text_document.uri}}}}; }

json to_json(const CodeLens& lens) {
  json j{{"range", {{"start", to_json(lens.range.start)}, {"end", to_json(lens.range.end)}}}};
  if (lens.command) {
    json c{{"title", lens.command->title}, {"command", lens.command->command}};
    if (!lens.command->arguments.is_null()) c["arguments"] = lens.command->arguments;
    j["command"] = std::move(c);
  }
  return j;
}

std::optional<DecodeError> from_json(const json& j, CodeLens& out, const std::string& ptr) {
  if (!j.is_object()) return DecodeError{ptr, "expected {range, command?}"};
  out = {};
  if (!j.contains("range")) return DecodeError{pointer_append(ptr, "range"), "is required"};
  if (auto e = read_range(j["range"], out.range, pointer_append(ptr, "range"))) return e;
  if (auto it = j.find("command"); it != j.end() && !it->is_null()) {
    const std::string at = pointer_append(ptr, "command");
    Command c;
    ObjectReader r(*it, at);
    r.required("title", c.title);
    r.required("command", c.command);
    if (r.error()) return r.error();
    if (auto args = it->find("arguments"); args != it->end() && !args->is_null()) {
      if (!args->is_array()) return DecodeError{pointer_append(at, "arguments"), "expected an array"};
      c.arguments = *args;
    }
    out.command = std::move(c);
  }
  return std::nullopt;
}

json to_json(const CodeLensResult& r) {
  json out = json::array();
  for (const auto& l : r.lenses) out.push_back(to_json(l));
  return out;
}

// The messages are LSP's -32602 wording ferry has always sent for this method.
std::optional<DecodeError> from_json(const json& j, ExecuteCommandParams& out, const std::string& ptr) {
  if (!j.is_object()) return DecodeError{ptr, "expected an object"};
  const auto command = j.find("command");
  if (command == j.end() || !command->is_string()) return DecodeError{ptr + "/command", "expected a string"};
  out.command = command->get<std::string>();
  out.arguments = json::array();
  if (auto args = j.find("arguments"); args != j.end()) {
    if (!args->is_array()) return DecodeError{ptr + "/arguments", "expected an array"};
    out.arguments = *args;
  }
  return std::nullopt;
}

json to_json(const ExecuteCommandParams& p) { return {{"command", p.command}, {"arguments", p.arguments}}; }

}  // namespace ferry::protocol
