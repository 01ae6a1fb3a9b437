// Completion scripts for bash, zsh and fish, generated from a CLI11 app's command definitions:
// sub-command names (nested ones too), each command's options (its own and the parents' options
// it accepts through fallthrough), the values of options and arguments with a fixed set (CLI::IsMember),
// file names for other values and arguments. Hidden commands and options (group "") are left out.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace ferry::cli {

// A function _NAME registered with `complete -F`; needs no bash-completion package.
std::string bash_completion(const CLI::App& app);
// A `#compdef NAME` file for $fpath (_arguments and _describe, with descriptions); sourcing it
// after compinit works too.
std::string zsh_completion(const CLI::App& app);
// `complete -c NAME` lines for fish, with descriptions.
std::string fish_completion(const CLI::App& app);

}  // namespace ferry::cli
