// The roff man page of a CLI11 app (man_page.hpp), from the CommandInfo tree (command_tree.hpp).
#include "helper/cli/man_page.hpp"

#include <algorithm>
#include <cctype>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "helper/cli/command_tree.hpp"

namespace ferry::cli {

namespace {

// One UTF-8 sequence at s[i] as a code point, advancing i; a malformed byte reads as U+FFFD.
char32_t next_code_point(std::string_view s, std::size_t& i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b = byte(i);
  int extra = b >= 0xF0 && b < 0xF8 ? 3 : b >= 0xE0 ? 2 : b >= 0xC0 ? 1 : -1;
  if (extra < 0 || i + extra >= s.size()) {
    ++i;
    return 0xFFFD;
  }
  char32_t cp = b & (0x3F >> extra);
  for (int k = 1; k <= extra; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) {
      ++i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  i += extra + 1;
  return cp;
}

// Several lines of text: each escaped; an empty line becomes .sp (a blank line that keeps the
// paragraph's indentation, where a raw blank line would not); indented lines (commands to type,
// as in a footer) stay as they are, unfilled.
std::string roff_lines(const std::string& text) {
  std::string out;
  bool literal = false;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = std::min(text.find('\n', start), text.size());
    std::string_view line(text.data() + start, end - start);
    bool indented = line.starts_with(' ');
    if (indented != literal) out += indented ? ".nf\n" : ".fi\n";
    literal = indented;
    out += line.empty() ? ".sp\n" : roff_escape(line) + "\n";
    start = end + 1;
  }
  return literal ? out + ".fi\n" : out;
}

std::string bold(std::string_view s) { return "\\fB" + roff_escape(s) + "\\fR"; }
std::string italic(std::string_view s) { return "\\fI" + roff_escape(s) + "\\fR"; }

std::string option_tag(const OptionInfo& o) {
  std::string tag;
  for (const auto& name : o.names) tag += (tag.empty() ? "" : ", ") + bold(name);
  if (o.takes_value()) tag += " " + italic(o.value_name);
  return tag;
}

std::string option_entry(const OptionInfo& o) {
  std::string text = o.description;
  if (!o.choices.empty()) {
    std::string list;
    for (const auto& c : o.choices) list += (list.empty() ? "" : ", ") + c;
    text += (text.empty() ? "One of: " : ". One of: ") + list;
  }
  if (!o.default_value.empty()) text += (text.empty() ? "Default: " : ". Default: ") + o.default_value;
  return ".TP\n" + option_tag(o) + "\n" + roff_lines(text.empty() ? "(no description)" : text);
}

std::string synopsis(const CommandInfo& cmd, bool root) {
  std::string line = bold(cmd.full_name());
  if (!cmd.options.empty()) line += root ? " [\\fIGLOBAL OPTIONS\\fR]" : " [\\fIOPTIONS\\fR]";
  if (!cmd.commands.empty()) return line + " \\fICOMMAND\\fR" + (root ? " [\\fIOPTIONS\\fR] [\\fIARGUMENTS\\fR]" : "") + "\n";
  for (const ArgumentInfo& a : cmd.arguments) {
    std::string arg = italic(a.name) + (a.many ? " .\\|.\\|." : "");
    line += a.required ? " " + arg : " [" + arg + "]";
  }
  return line + "\n";
}

std::string argument_entries(const CommandInfo& cmd) {
  std::string out;
  for (const ArgumentInfo& a : cmd.arguments) {
    std::string text = a.description;
    if (!a.choices.empty()) {
      std::string list;
      for (const auto& c : a.choices) list += (list.empty() ? "" : ", ") + c;
      text += (text.empty() ? "One of: " : ". One of: ") + list;
    }
    out += ".TP\n" + italic(a.name) + "\n" + roff_lines(text.empty() ? "(no description)" : text);
  }
  return out;
}

// A sub-command's subsection: how to call it, what it does, its options, arguments and footer.
std::string command_section(const CommandInfo& cmd) {
  std::string out = ".SS " + roff_escape("\"" + cmd.full_name() + "\"") + "\n" + synopsis(cmd, false) + ".PP\n" + roff_lines(cmd.description);
  for (const OptionInfo& o : cmd.options)
    if (!o.help) out += option_entry(o);  // GLOBAL OPTIONS says it once
  out += argument_entries(cmd);
  if (!cmd.commands.empty()) {
    std::string names;
    for (const CommandInfo& sub : cmd.commands) names += (names.empty() ? "" : ", ") + bold(sub.name());
    out += ".PP\nCommands: " + names + " (below).\n";
  }
  if (!cmd.footer.empty()) out += ".PP\n" + roff_lines(cmd.footer);
  return out;
}

// NAME's line ("ferry \- what it is") and DESCRIPTION's text from the app's description, whose
// first line may read "NAME: what it is."
std::pair<std::string, std::string> name_and_description(const CommandInfo& root) {
  std::string first = root.description.substr(0, root.description.find('\n'));
  std::string rest = first.size() < root.description.size() ? root.description.substr(first.size() + 1) : "";
  std::string what = first.starts_with(root.name() + ": ") ? first.substr(root.name().size() + 2) : first;
  if (what.ends_with('.')) what.pop_back();
  std::string name_line = roff_escape(root.name()) + (what.empty() ? "" : " \\- " + roff_escape(what));
  return {name_line + "\n", roff_lines(rest.empty() ? first : rest)};
}

// The app's footer: EXIT STATUS when it is the exit status table ("Exit status: 0 ok; ..."), else NOTES.
std::string footer_section(const std::string& footer) {
  if (footer.empty()) return "";
  constexpr std::string_view kLead = "exit status";
  std::string lead = footer.substr(0, kLead.size());
  std::ranges::transform(lead, lead.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lead != kLead) return ".SH NOTES\n" + roff_lines(footer);
  auto text = footer.find_first_not_of(" :", kLead.size());
  return ".SH EXIT STATUS\n" + roff_lines(footer.substr(text == std::string::npos ? footer.size() : text));
}

}  // namespace

std::string roff_escape(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    char c = text[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      out += fmt::format("\\[u{:04X}]", static_cast<std::uint32_t>(next_code_point(text, i)));
      continue;
    }
    ++i;
    if (c == '\\') out += "\\e";
    else if (c == '-') out += "\\-";
    else if (c == '`') out += "\\(ga";
    else if ((c == '.' || c == '\'') && out.empty()) out += std::string("\\&") + c;
    else out += c;
  }
  return out;
}

std::string man_page(const CLI::App& app, const std::string& version) {
  CommandInfo root = read_command_tree(app);
  std::string name = root.name(), upper = name;
  std::ranges::transform(upper, upper.begin(), [](unsigned char c) { return std::toupper(c); });
  auto [name_line, description] = name_and_description(root);
  std::string out = fmt::format(".\\\" Man page of {0}, generated by `{0} man-page` from {0}'s command definitions; do not edit.\n", name);
  out += fmt::format(".TH {} 1 \"\" \"{}\" \"User Commands\"\n", roff_escape(upper), roff_escape(name + " " + version));
  out += ".nh\n.ad l\n";  // no hyphens inside option names and paths; ragged right, as --help prints
  out += ".SH NAME\n" + name_line + ".SH SYNOPSIS\n" + synopsis(root, true) + ".SH DESCRIPTION\n" + description;
  if (!root.options.empty()) {
    out += ".SH GLOBAL OPTIONS\n";
    if (!root.commands.empty() && !root.commands.front().inherited.empty()) out += "They may also follow the command.\n";
    for (const OptionInfo& o : root.options) out += option_entry(o);
  }
  if (!root.commands.empty()) out += ".SH COMMANDS\n";
  for (const CommandInfo* cmd : all_commands(root))
    if (cmd != &root) out += command_section(*cmd);
  out += footer_section(root.footer);
  return out + ".SH VERSION\nThis page describes " + roff_escape(name + " " + version) + ".\n";
}

}  // namespace ferry::cli
