// What the LSP surface reads out of a client's params, as pure functions (no server state), so
// the fuzzer can run them alone: a document's path from its URI, and a command's target from
// workspace/executeCommand's arguments.
#pragma once

#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/jsonrpc.hpp"

namespace ferry::server {

// params.textDocument.uri as a local path; -32602 naming the pointer or the URI's fault.
std::expected<std::filesystem::path, protocol::ResponseError> document_path(const protocol::json& params,
                                                                            std::string_view method);

// A command's first argument: a file URI or absolute path, or {uri | file, args?, ...} (the
// object is kept whole in `options`; launch (string), localPort (0-65535) and resume (bool) are
// checked here).
struct CommandTarget {
  std::optional<std::filesystem::path> file;
  std::vector<std::string> args;
  protocol::json options = protocol::json::object();
};
std::expected<CommandTarget, protocol::ResponseError> command_target(const std::string& command,
                                                                     const protocol::json& arguments);

// -32602 "COMMAND: what".
protocol::ResponseError command_usage(const std::string& command, const std::string& what);

}  // namespace ferry::server
