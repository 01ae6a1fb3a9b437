// Params of the LSP surface: see lsp_params.hpp.
#include "helper/server/lsp_params.hpp"

#include "protocol/file_uri.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
namespace fs = std::filesystem;
using p::json;
using p::ResponseError;

ResponseError command_usage(const std::string& command, const std::string& what) {
  return ResponseError{p::error_code::kInvalidParams, command + ": " + what, {}};
}

std::expected<fs::path, ResponseError> document_path(const json& params, std::string_view method) {
  const json* doc = params.is_object() && params.contains("textDocument") ? &params["textDocument"] : nullptr;
  if (!doc || !doc->is_object() || !doc->contains("uri") || !(*doc)["uri"].is_string())
    return std::unexpected(ResponseError{p::error_code::kInvalidParams,
                                         "invalid params for " + std::string(method) + ": /textDocument/uri: expected a string",
                                         json{{"pointer", "/textDocument/uri"}}});
  auto path = p::file_uri_to_fs_path((*doc)["uri"].get<std::string>());
  if (!path) return std::unexpected(ResponseError{p::error_code::kInvalidParams, std::string(method) + ": " + path.error(), {}});
  return *path;
}

std::expected<CommandTarget, ResponseError> command_target(const std::string& command, const json& arguments) {
  CommandTarget t;
  if (!arguments.is_array() || arguments.empty()) return t;
  const json& first = arguments[0];
  std::optional<std::string> where;
  if (first.is_string()) {
    where = first.get<std::string>();
  } else if (first.is_object()) {
    t.options = first;
    for (const char* key : {"uri", "file"})
      if (first.contains(key) && first[key].is_string()) where = first[key].get<std::string>();
    if (first.contains("args")) {
      if (!first["args"].is_array()) return std::unexpected(command_usage(command, "args: expected an array of strings"));
      for (const auto& a : first["args"]) {
        if (!a.is_string()) return std::unexpected(command_usage(command, "args: expected an array of strings"));
        t.args.push_back(a.get<std::string>());
      }
    }
  } else if (!first.is_null()) {
    return std::unexpected(command_usage(command, "expected a file URI or an object {uri, args}"));
  }
  // The options the commands read, checked here so no handler meets a wrong type.
  const json& o = t.options;
  if (o.contains("launch") && !o["launch"].is_string())
    return std::unexpected(command_usage(command, "launch: expected a launch entry's name"));
  if (o.contains("localPort") &&
      !(o["localPort"].is_number_integer() && o["localPort"].get<long long>() >= 0 && o["localPort"].get<long long>() <= 65535))
    return std::unexpected(command_usage(command, "localPort: expected a TCP port (0-65535; 0 picks a free one)"));
  if (o.contains("port") &&
      !(o["port"].is_number_integer() && o["port"].get<long long>() >= 1 && o["port"].get<long long>() <= 65535))
    return std::unexpected(command_usage(command, "port: expected a TCP port on the box (1-65535)"));
  if (o.contains("resume") && !o["resume"].is_boolean())
    return std::unexpected(command_usage(command, "resume: expected true or false"));
  if (where) {
    if (where->starts_with("file:")) {
      auto path = p::file_uri_to_fs_path(*where);
      if (!path) return std::unexpected(command_usage(command, path.error()));
      t.file = *path;
    } else if (fs::path(*where).is_absolute()) {
      t.file = fs::path(*where);
    } else {
      return std::unexpected(command_usage(command, "expected an absolute path or a file URI, not " + *where));
    }
  }
  return t;
}

}  // namespace ferry::server
