// file:// URIs as LSP clients send them (RFC 3986 with percent-encoding; VS Code also encodes
// ':' in Windows drive letters and '@'), to and from local paths. Anything that is not a local
// file URI is refused with a message, never guessed at: these come from outside.
//
// Both path styles are here on every platform (so both are tested on Linux); callers that do not
// name one get the style of the platform ferry was built for.
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <string_view>

namespace ferry::protocol {

enum class PathStyle {
  posix,    // "/home/u/a.py"
  windows,  // "C:\Users\me\a.py", "\\server\share\a.py"
};

#ifdef _WIN32
inline constexpr PathStyle native_path_style = PathStyle::windows;
#else
inline constexpr PathStyle native_path_style = PathStyle::posix;
#endif

// posix: "file:///home/u/a%20b.py" -> "/home/u/a b.py". Accepts "file://localhost/..." and an
// empty authority; refuses other hosts.
//
// windows: a drive path or a UNC path, '\'-separated, the drive letter upper-cased:
//   "file:///c%3A/Users/me/a.py" (VS Code), "file:///C:/Users/me/a.py" (LSP4IJ / IntelliJ),
//   "file://localhost/c:/x" and the old "file:///C|/x"          -> "C:\Users\me\a.py"
//   "file://server/share/dir/a.py", "file:////server/share/x"    -> "\\server\share\dir\a.py"
// A URI with neither a drive nor a server and share ("file:///home/u") is refused.
//
// Both: other schemes, relative paths, bad escapes and NUL bytes are refused; a query or a
// fragment is not part of the name. Bytes are as the URI's escapes spell them (UTF-8 from every
// client ferry knows), never re-encoded.
std::expected<std::string, std::string> file_uri_to_path(std::string_view uri, PathStyle style = native_path_style);

// posix: "/home/u/a b.py" -> "file:///home/u/a%20b.py": every byte outside RFC 3986's unreserved
// set and '/' is escaped, so any file name (spaces, '#', '?', '%', non-UTF-8 bytes) round-trips.
//
// windows: the form VS Code writes, '\' or '/' separators accepted:
//   "C:\x\y", "c:/x/y" -> "file:///c%3A/x/y" (lower-case drive, ':' escaped; "C:" is "C:\")
//   "\\Server\share\x", "//server/share/x" -> "file://server/share/x" (the host lower-cased,
//   as VS Code does: Windows does not tell a server's name's case)
// A path with neither (it is not absolute on Windows) is written as "file:///" and the path with
// '/' separators; file_uri_to_path refuses it back.
std::string path_to_file_uri(std::string_view absolute_path, PathStyle style = native_path_style);

// The same in the native style, as std::filesystem::path, which is made from the UTF-8 and read
// back as UTF-8: MinGW's libstdc++ takes a narrow std::string through the C locale byte by byte,
// so fs::path(std::string) and .string() garble every non-ASCII name on Windows. A URI whose
// bytes are not UTF-8 is refused on Windows (no name there can have them); on POSIX any bytes go.
std::expected<std::filesystem::path, std::string> file_uri_to_fs_path(std::string_view uri);
std::string fs_path_to_file_uri(const std::filesystem::path& absolute_path);

}  // namespace ferry::protocol
