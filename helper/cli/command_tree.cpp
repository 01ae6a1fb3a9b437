// Reads a CLI11 app's command definitions into CommandInfo (command_tree.hpp).
#include "helper/cli/command_tree.hpp"

#include <algorithm>

#include <CLI/CLI.hpp>

namespace ferry::cli {

namespace {

// CLI::IsMember describes itself as "{a,b,c}" inside the type name ("TEXT:{a,b,c}"); that text is
// the only place CLI11 2.x exposes the set, so the values are read back from it.
std::vector<std::string> choices_of(const std::string& type_name) {
  auto open = type_name.find(":{");
  if (open == std::string::npos) return {};
  auto close = type_name.find('}', open);
  if (close == std::string::npos) return {};
  std::vector<std::string> out;
  std::string list = type_name.substr(open + 2, close - open - 2);
  for (std::size_t start = 0; start <= list.size();) {
    auto comma = std::min(list.find(',', start), list.size());
    if (comma > start) out.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

bool takes_no_value(const CLI::Option& opt) { return opt.get_type_size_max() == 0 || opt.get_expected_max() == 0; }

bool repeatable(const CLI::Option& opt) {
  return opt.get_items_expected_max() > 1 || opt.get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll;
}

OptionInfo option_info(const CLI::Option& opt) {
  OptionInfo o;
  for (const auto& s : opt.get_snames()) o.names.push_back("-" + s);
  for (const auto& l : opt.get_lnames()) o.names.push_back("--" + l);
  o.description = opt.get_description();
  if (!takes_no_value(opt)) {
    std::string type = opt.get_type_name();
    o.choices = choices_of(type);
    o.value_name = type.substr(0, type.find(':'));
    if (o.value_name.empty()) o.value_name = "VALUE";
    o.default_value = opt.get_default_str();
    o.repeatable = repeatable(opt);
  }
  return o;
}

ArgumentInfo argument_info(const CLI::Option& opt) {
  ArgumentInfo a;
  a.name = opt.get_name(true);
  a.description = opt.get_description();
  a.choices = choices_of(opt.get_type_name());
  a.many = opt.get_items_expected_max() > 1;
  a.required = opt.get_required();
  return a;
}

// Options and arguments of `app`, and of its option groups (nameless sub-apps whose options the
// app itself parses).
void read_options(const CLI::App& app, CommandInfo& out) {
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_group().empty()) continue;
    if (opt->nonpositional()) {
      out.options.push_back(option_info(*opt));
      out.options.back().help = opt == app.get_help_ptr() || opt == app.get_help_all_ptr();
    } else if (opt->get_positional()) out.arguments.push_back(argument_info(*opt));
  }
  for (const CLI::App* group : app.get_subcommands([](const CLI::App* s) { return s->get_name().empty(); }))
    read_options(*group, out);
}

// CLI11 copies a parent's footer into each sub-command made after it was set.
bool inherited_footer(const CLI::App& app) {
  for (const CLI::App* up = app.get_parent(); up != nullptr; up = up->get_parent())
    if (up->get_footer() == app.get_footer()) return true;
  return false;
}

bool has_name(const std::vector<OptionInfo>& options, const std::string& name) {
  return std::ranges::any_of(options, [&](const OptionInfo& o) { return std::ranges::count(o.names, name) > 0; });
}

// What a command accepts of its parent's options: with fallthrough, CLI11 hands an option the
// command does not know to its parent (and on up while each level falls through).
void inherit(CommandInfo& cmd, const CommandInfo& parent) {
  for (const auto* list : {&parent.options, &parent.inherited})
    for (const OptionInfo& o : *list)
      if (std::ranges::none_of(o.names, [&](const std::string& n) { return has_name(cmd.options, n) || has_name(cmd.inherited, n); }))
        cmd.inherited.push_back(o);
}

CommandInfo read_command(const CLI::App& app, std::vector<std::string> path, const CommandInfo* parent) {
  CommandInfo cmd;
  cmd.path = std::move(path);
  cmd.description = app.get_description();
  if (!inherited_footer(app)) cmd.footer = app.get_footer();
  read_options(app, cmd);
  if (parent && app.get_fallthrough()) inherit(cmd, *parent);
  auto visible = [](const CLI::App* s) { return !s->get_name().empty() && !s->get_group().empty(); };
  for (const CLI::App* sub : app.get_subcommands(visible)) {
    auto sub_path = cmd.path;
    sub_path.push_back(sub->get_name());
    cmd.commands.push_back(read_command(*sub, std::move(sub_path), &cmd));
  }
  return cmd;
}

void collect(const CommandInfo& cmd, std::vector<const CommandInfo*>& out) {
  out.push_back(&cmd);
  for (const CommandInfo& sub : cmd.commands) collect(sub, out);
}

}  // namespace

std::string CommandInfo::full_name() const {
  std::string out;
  for (const auto& word : path) out += (out.empty() ? "" : " ") + word;
  return out;
}

CommandInfo read_command_tree(const CLI::App& app) {
  std::string name = app.get_name().empty() ? "app" : app.get_name();
  return read_command(app, {name}, nullptr);
}

std::vector<const CommandInfo*> all_commands(const CommandInfo& root) {
  std::vector<const CommandInfo*> out;
  collect(root, out);
  return out;
}

std::string summary(const std::string& description, std::size_t width) {
  std::string line = description.substr(0, description.find('\n'));
  if (line.size() <= width) return line;
  auto cut = line.rfind(' ', width - 3);
  if (cut == std::string::npos) {  // one long word: cut it, but not inside a UTF-8 sequence
    cut = width - 3;
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  }
  return line.substr(0, cut) + "...";
}

}  // namespace ferry::cli
