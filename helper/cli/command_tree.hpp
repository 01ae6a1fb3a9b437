// What shell completions and the man page need of a CLI11 app, read from its own definitions
// (never restated by hand, so they cannot drift from what the parser accepts).
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ferry::cli {

struct OptionInfo {
  std::vector<std::string> names;    // as typed: "-n", "--dry-run" (short ones first)
  std::string description;
  std::string value_name;            // "" for a flag; else CLI11's type name without validators ("TEXT")
  std::vector<std::string> choices;  // the values a CLI::IsMember check allows, else empty
  std::string default_value;         // as capture_default_str() recorded it, else empty
  bool repeatable = false;           // takes several values or may be given several times
  bool help = false;                 // the app's help flag (-h, --help)
  bool takes_value() const { return !value_name.empty(); }
};

struct ArgumentInfo {  // a positional argument
  std::string name;
  std::string description;
  std::vector<std::string> choices;
  bool many = false;  // a list (takes the rest of the words)
  bool required = false;
};

struct CommandInfo {
  std::vector<std::string> path;  // {"ferry"}, {"ferry", "env", "sync"}: the words that reach it
  std::string description;
  std::string footer;  // its own: CLI11 copies a parent's footer into sub-commands made after it; that copy is left out
  std::vector<OptionInfo> options;    // its own visible options
  std::vector<OptionInfo> inherited;  // its ancestors' options it accepts too (CLI11 fallthrough)
  std::vector<ArgumentInfo> arguments;
  std::vector<CommandInfo> commands;  // its visible sub-commands
  std::string name() const { return path.back(); }
  std::string full_name() const;  // "ferry env sync"
};

// The visible tree: sub-commands and options in a group named "" (CLI11's hidden) are left out.
CommandInfo read_command_tree(const CLI::App& app);

// Every command of the tree, parents before their children (the root first).
std::vector<const CommandInfo*> all_commands(const CommandInfo& root);

// The description's first line, cut near `width` characters: a completion menu's one line.
std::string summary(const std::string& description, std::size_t width = 100);

}  // namespace ferry::cli
