// The man page (roff, section 1) of a CLI11 app, generated from its command definitions like the
// shell completions: NAME and DESCRIPTION from the app's description, SYNOPSIS, GLOBAL OPTIONS,
// COMMANDS (a subsection per visible sub-command, nested ones too, with options, arguments and the
// command's footer), EXIT STATUS from the app's footer when it is the exit status table, VERSION.
#pragma once

#include <string>
#include <string_view>

namespace CLI {
class App;
}

namespace ferry::cli {

// `version` is passed in: CLI11 keeps the --version text inside the flag's callback.
std::string man_page(const CLI::App& app, const std::string& version);

// Text for roff: backslashes and minus signs escaped, non-ASCII as \[uXXXX], a line that would
// start with '.' or '\'' (a control line) guarded with \&.
std::string roff_escape(std::string_view text);

}  // namespace ferry::cli
