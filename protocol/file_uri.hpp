// file:// URIs as LSP clients send them (RFC 3986 with percent-encoding; VS Code also encodes
// ':' in Windows drive letters and '@'), to and from local paths. Anything that is not a local
// file URI is refused with a message, never guessed at: these come from outside.
#pragma once

#include <expected>
#include <string>
#include <string_view>

namespace ferry::protocol {

// "file:///home/u/a%20b.py" -> "/home/u/a b.py". Accepts "file://localhost/..." and an empty
// authority; refuses other schemes, other hosts, relative paths, bad escapes and NUL bytes.
std::expected<std::string, std::string> file_uri_to_path(std::string_view uri);

// "/home/u/a b.py" -> "file:///home/u/a%20b.py": every byte outside RFC 3986's unreserved set
// and '/' is escaped, so any file name (spaces, '#', '?', '%', non-UTF-8 bytes) round-trips.
std::string path_to_file_uri(std::string_view absolute_path);

}  // namespace ferry::protocol
