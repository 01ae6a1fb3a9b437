// Which directories may be a mapping root: the one rule ferry.json's validator (on the literal
// path) and the agent (on the path as it resolves on the box) both apply. Pure text, no I/O.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ferry::protocol {

// Why `root` cannot be a mapping root, as the end of a sentence ("it is a system directory
// ..."), or nullopt when it can. A mapping root is listed whole by every sync, and `--delete`
// offers to remove what ferry did not put there, so it must be the project's own directory:
// refused are the whole filesystem ("/"), a home directory itself ("~", "/root", "/home",
// "/home/USER"), system directories and everything below them (/bin /boot /dev /etc /lib /lib32
// /lib64 /libx32 /proc /run /sbin /sys /usr /var/lib /var/log /var/cache: the package manager's,
// the kernel's, or another filesystem; /dev/shm's subdirectories excepted), and shared
// directories themselves (/tmp /var /var/tmp /opt /srv /mnt /media /dev/shm: other users' and
// programs' files; a project directory below them is fine, e.g. a scratch copy in RAM at
// /dev/shm/NAME). Spellings like "//etc/./" count as "/etc".
std::optional<std::string> mapping_root_reason(std::string_view root);

// `path` in double quotes, as messages show paths.
std::string quoted(std::string_view path);

// What to use instead, the tail of every refusal: "use a directory of the project's own, e.g.
// \"~/work/NAME\"".
std::string mapping_root_advice(std::string_view project_name);

// The refusal of a literal path (ferry.json's mapping remote): "\"/etc\" cannot be a mapping
// root: it is ...; use ...", or nullopt.
std::optional<std::string> remote_root_refusal(std::string_view remote, std::string_view project_name);

// The same rule as an ECMAScript regular expression matching the refused roots (anchored with
// '$', to be used after '^' or inside a lookahead): the schema's /mappings/N/remote pattern starts
// with "^(?!" + this + ")", so editors flag such roots too.
inline constexpr const char* kRefusedRemoteRootPattern =
    "(?:~|/(?:\\.?/)*(?:(?:root|home(?:/(?:\\.?/)*[^/]+)?|tmp|var(?:/(?:\\.?/)*tmp)?|opt|srv|mnt|media)|"
    "dev(?:/(?:\\.?/)*(?:shm|(?!shm(?:/|$))[^/].*))?|"
    "(?:bin|boot|etc|lib|lib32|lib64|libx32|proc|run|sbin|sys|usr|var/(?:\\.?/)*(?:lib|log|cache))(?:/.*)?|\\.)?)"
    "(?:/\\.?)*$";

// Blanks at either end of a mapping path: a remote "~/p " would make a directory whose name ends
// in a space. The characters are the schema's \s in ASCII.
bool has_outer_whitespace(std::string_view path);

}  // namespace ferry::protocol
