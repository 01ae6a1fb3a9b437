// Bash, zsh and fish completion scripts from a CLI11 app (shell_completion.hpp). Each walks the
// CommandInfo tree (command_tree.hpp); the scripts find the command path typed so far by skipping
// options and the values of options that take one.
#include "helper/cli/shell_completion.hpp"

#include <algorithm>
#include <cctype>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "helper/cli/command_tree.hpp"

namespace ferry::cli {

namespace {

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// POSIX shell single quotes (bash and zsh): 'it'\''s'.
std::string sh_quote(std::string_view s) { return "'" + replace_all(std::string(s), "'", "'\\''") + "'"; }

// fish single quotes: only \ and ' are special inside them.
std::string fish_quote(std::string_view s) {
  return "'" + replace_all(replace_all(std::string(s), "\\", "\\\\"), "'", "\\'") + "'";
}

// A word bash's `compgen -W` and zsh's `(a b c)` take as it is: they expand and split the list.
bool plain_word(const std::string& w) {
  return !w.empty() && std::ranges::all_of(w, [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-_.,+:=@/%^").find(c) != std::string_view::npos;
  });
}

std::vector<std::string> plain_choices(const std::vector<std::string>& choices) {
  std::vector<std::string> out;
  std::ranges::copy_if(choices, std::back_inserter(out), plain_word);
  return out;
}

std::string join(const std::vector<std::string>& words, std::string_view sep = " ") {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : std::string(sep)) + w;
  return out;
}

// An identifier for shell function names: "trust-project" -> "trust_project".
std::string ident(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return out;
}

std::vector<const OptionInfo*> completable_options(const CommandInfo& cmd) {
  std::vector<const OptionInfo*> out;
  for (const auto* list : {&cmd.options, &cmd.inherited})
    for (const OptionInfo& o : *list) out.push_back(&o);
  return out;
}

std::vector<std::string> option_names(const CommandInfo& cmd, bool valued_only) {
  std::vector<std::string> out;
  for (const OptionInfo* o : completable_options(cmd))
    if (!valued_only || o->takes_value()) out.insert(out.end(), o->names.begin(), o->names.end());
  return out;
}

std::vector<std::string> command_names(const CommandInfo& cmd) {
  std::vector<std::string> out;
  for (const CommandInfo& sub : cmd.commands) out.push_back(sub.name());
  return out;
}

// The values an argument of `cmd` completes to: the first argument's fixed set, if it has one.
std::vector<std::string> argument_choices(const CommandInfo& cmd) {
  return cmd.arguments.empty() ? std::vector<std::string>{} : plain_choices(cmd.arguments.front().choices);
}

bool takes_arguments(const CommandInfo& cmd) { return cmd.commands.empty() && !cmd.arguments.empty(); }

// ---- bash ----

std::string bash_spec_function(const std::string& fn, const std::vector<const CommandInfo*>& commands) {
  std::string out = fmt::format(
      "# Sets subs (sub-command names), opts (option names), valued (the options that take a value) and\n"
      "# args (1 when it takes arguments) for the command path in $1.\n"
      "{}_spec() {{\n  case $1 in\n", fn);
  for (const CommandInfo* c : commands)
    out += fmt::format("    {}) subs={} opts={} valued={} args={} ;;\n", sh_quote(c->full_name()),
                       sh_quote(join(command_names(*c))), sh_quote(join(option_names(*c, false))),
                       sh_quote(join(option_names(*c, true))), takes_arguments(*c) ? 1 : 0);
  return out + "    *) subs='' opts='' valued='' args=0 ;;\n  esac\n}\n\n";
}

std::string bash_values_function(const std::string& fn, const std::vector<const CommandInfo*>& commands) {
  std::string out = fmt::format(
      "# Completes into COMPREPLY the value of option $2 (or, with $2 empty, an argument) of the command\n"
      "# path in $1: a fixed set of values, else file names.\n"
      "{}_values() {{\n  local choices=''\n  case \"$1|$2\" in\n", fn);
  for (const CommandInfo* c : commands) {
    for (const OptionInfo* o : completable_options(*c))
      if (auto choices = plain_choices(o->choices); o->takes_value() && !choices.empty())
        for (const auto& name : o->names)
          out += fmt::format("    {}) choices={} ;;\n", sh_quote(c->full_name() + "|" + name), sh_quote(join(choices)));
    if (auto choices = argument_choices(*c); takes_arguments(*c) && !choices.empty())
      out += fmt::format("    {}) choices={} ;;\n", sh_quote(c->full_name() + "|"), sh_quote(join(choices)));
  }
  return out +
         "    *) compopt -o filenames 2>/dev/null\n"
         "       mapfile -t COMPREPLY < <(compgen -f -- \"$cur\")\n"
         "       return ;;\n"
         "  esac\n"
         "  mapfile -t COMPREPLY < <(compgen -W \"$choices\" -- \"$cur\")\n"
         "}\n\n";
}

std::string bash_main_function(const std::string& fn, const std::string& name) {
  return fmt::format(
      R"(_{1}() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} prev='' cmd={2} w i subs opts valued args dashdash=0
  ((COMP_CWORD > 0)) && prev=${{COMP_WORDS[COMP_CWORD - 1]}}
  COMPREPLY=()
  # The command path so far: words that name a sub-command, skipping options and their values.
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${{COMP_WORDS[i]}}
    {0}_spec "$cmd"
    if [[ $w == -- ]]; then
      dashdash=1
      break
    elif [[ " $valued " == *" $w "* ]]; then
      ((i++))
    elif [[ $w != -* && " $subs " == *" $w "* ]]; then
      cmd+=" $w"
    fi
  done
  {0}_spec "$cmd"
  if ((dashdash)); then
    {0}_values "$cmd" ''
  elif [[ -n $prev && " $valued " == *" $prev "* ]]; then
    {0}_values "$cmd" "$prev"
  elif [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
  else
    local found=()
    mapfile -t found < <(compgen -W "$subs" -- "$cur")
    ((args)) && {0}_values "$cmd" ''
    COMPREPLY=("${{found[@]}}" "${{COMPREPLY[@]}}")
  fi
  return 0
}}
complete -F _{1} {2}
)",
      fn, ident(name), sh_quote(name));
}

// ---- zsh ----

// Text inside an _arguments [description]: ] and \ are special there.
std::string zsh_bracket(const std::string& s) { return replace_all(replace_all(summary(s), "\\", "\\\\"), "]", "\\]"); }

// The message and action after an option's or argument's ':'.
std::string zsh_action(const std::string& message, const std::vector<std::string>& choices) {
  std::string msg = replace_all(message, ":", "\\:");
  auto plain = plain_choices(choices);
  if (plain.empty()) return msg + ":_files";
  for (auto& c : plain) c = replace_all(c, ":", "\\:");
  return msg + ":(" + join(plain) + ")";
}

std::string zsh_option_specs(const OptionInfo& o) {
  std::string out;
  std::string exclusive = o.repeatable || o.names.size() < 2 ? "" : "(" + join(o.names) + ")";
  for (const auto& name : o.names) {
    std::string spec = (o.repeatable ? "*" : exclusive) + name;
    if (o.takes_value()) spec += name.starts_with("--") ? "=" : "+";
    spec += "[" + zsh_bracket(o.description) + "]";
    if (o.takes_value()) spec += ":" + zsh_action(o.names.back().substr(o.names.back().find_first_not_of('-')), o.choices);
    out += " \\\n    " + sh_quote(spec);
  }
  return out;
}

std::string zsh_argument_specs(const CommandInfo& cmd) {
  std::string out;
  int position = 1;
  for (const ArgumentInfo& a : cmd.arguments) {
    std::string spec = a.many ? "*:" : fmt::format("{}:{}", position++, a.required ? "" : ":");
    out += " \\\n    " + sh_quote(spec + zsh_action(a.name, a.choices));
    if (a.many) break;  // takes the rest of the words
  }
  return out;
}

std::string zsh_commands_function(const std::string& fn, const CommandInfo& cmd) {
  std::string out = fn + "__commands() {\n  local -a commands=(\n";
  for (const CommandInfo& sub : cmd.commands)
    out += "    " + sh_quote(replace_all(sub.name(), ":", "\\:") + ":" + summary(sub.description)) + "\n";
  return out + fmt::format("  )\n  _describe -t commands {} commands\n}}\n\n", sh_quote(cmd.full_name() + " command"));
}

std::string zsh_command_function(const std::string& fn, const CommandInfo& cmd) {
  std::string options;
  for (const OptionInfo* o : completable_options(cmd)) options += zsh_option_specs(*o);
  if (cmd.commands.empty())
    return fmt::format("{}() {{\n  _arguments -s -S{}{}\n}}\n\n", fn, options, zsh_argument_specs(cmd));
  std::string out = fmt::format(
      "{0}() {{\n"
      "  local curcontext=$curcontext state state_descr line ret=1\n"
      "  typeset -A opt_args\n"
      "  _arguments -C -s -S{1} \\\n"
      "    '1: :{0}__commands' \\\n"
      "    '*:: :->args' && ret=0\n"
      "  if [[ $state == args ]]; then\n"
      "    curcontext=${{curcontext%:*:*}}:{2}-$words[1]:\n"
      "    case $words[1] in\n",
      fn, options, ident(cmd.full_name()));
  for (const CommandInfo& sub : cmd.commands)
    out += fmt::format("      ({}) {} && ret=0 ;;\n", sh_quote(sub.name()), fn + "_" + ident(sub.name()));
  out += "    esac\n  fi\n  return ret\n}\n\n";
  return out + zsh_commands_function(fn, cmd);
}

void zsh_functions(const std::string& fn, const CommandInfo& cmd, std::string& out) {
  out += zsh_command_function(fn, cmd);
  for (const CommandInfo& sub : cmd.commands) zsh_functions(fn + "_" + ident(sub.name()), sub, out);
}

// ---- fish ----

std::string fish_helpers(const std::string& fn, const std::vector<const CommandInfo*>& commands) {
  std::string out = fmt::format("# The options of the command path in $argv that take a value.\nfunction {}_valued\n    switch \"$argv\"\n", fn);
  for (const CommandInfo* c : commands)
    if (auto valued = option_names(*c, true); !valued.empty())
      out += fmt::format("        case {}\n            printf '%s\\n' {}\n", fish_quote(c->full_name()), join(valued));
  out += "    end\nend\n\n# Every command path.\nfunction " + fn + "_commands\n    printf '%s\\n'";
  for (const CommandInfo* c : commands) out += " " + fish_quote(c->full_name());
  out += "\nend\n\n";
  return out + fmt::format(R"(# The command path typed so far: words that name a sub-command, skipping options and their values.
function {0}_command
    set -l cmd {1}
    set -l skip 0
    for w in (commandline -opc)[2..-1]
        if test $skip = 1
            set skip 0
        else if test "$w" = --
            break
        else if contains -- $w ({0}_valued $cmd)
            set skip 1
        else if not string match -q -- '-*' $w; and contains -- "$cmd $w" ({0}_commands)
            set cmd "$cmd $w"
        end
    end
    echo $cmd
end

# True when the words typed so far reach exactly the command path in $argv.
function {0}_at
    test ({0}_command) = "$argv"
end

)",
                           fn, fish_quote(commands.front()->name()));
}

std::string fish_option_line(const std::string& head, const OptionInfo& o) {
  std::string line = head;
  for (const auto& name : o.names)
    line += name.starts_with("--") ? " -l " + fish_quote(name.substr(2)) : " -s " + fish_quote(name.substr(1));
  if (auto choices = plain_choices(o.choices); o.takes_value() && !choices.empty())
    line += " -x -a " + fish_quote(join(choices));
  else if (o.takes_value())
    line += " -r -F";
  return line + " -d " + fish_quote(summary(o.description)) + "\n";
}

std::string fish_command_lines(const std::string& name, const CommandInfo& cmd) {
  std::string head = fmt::format("complete -c {} -n {}", fish_quote(name), fish_quote("__" + ident(name) + "_at " + cmd.full_name()));
  std::string out;
  for (const CommandInfo& sub : cmd.commands)
    out += fmt::format("{} -a {} -d {}\n", head, fish_quote(sub.name()), fish_quote(summary(sub.description)));
  for (const OptionInfo* o : completable_options(cmd)) out += fish_option_line(head, *o);
  if (takes_arguments(cmd)) {
    auto choices = argument_choices(cmd);
    const auto& arg = cmd.arguments.front();
    out += choices.empty() ? head + " -F\n"
                           : fmt::format("{} -a {} -d {}\n", head, fish_quote(join(choices)), fish_quote(summary(arg.description)));
  }
  return out;
}

}  // namespace

std::string bash_completion(const CLI::App& app) {
  CommandInfo root = read_command_tree(app);
  auto commands = all_commands(root);
  std::string name = root.name(), fn = "__" + ident(name);
  std::string out = fmt::format(
      "# bash completion for {0}, generated by `{0} completion bash` from {0}'s command definitions.\n"
      "# Install: {0} completion bash > ~/.local/share/bash-completion/completions/{0}\n\n",
      name);
  return out + bash_spec_function(fn, commands) + bash_values_function(fn, commands) + bash_main_function(fn, name);
}

std::string zsh_completion(const CLI::App& app) {
  CommandInfo root = read_command_tree(app);
  std::string name = root.name(), fn = "_" + ident(name);
  std::string out = fmt::format(
      "#compdef {0}\n"
      "# zsh completion for {0}, generated by `{0} completion zsh` from {0}'s command definitions.\n"
      "# Install: {0} completion zsh > ~/.zfunc/_{0}, with fpath=(~/.zfunc $fpath) before compinit in ~/.zshrc.\n\n",
      name);
  zsh_functions(fn, root, out);
  // Autoloaded from $fpath this file is the body of _NAME: it defines the functions, then completes.
  // Sourced (after compinit), it registers _NAME instead.
  return out + fmt::format("if [[ $funcstack[1] == {0} ]]; then\n  {0} \"$@\"\nelse\n  compdef {0} {1}\nfi\n", fn, sh_quote(name));
}

std::string fish_completion(const CLI::App& app) {
  CommandInfo root = read_command_tree(app);
  auto commands = all_commands(root);
  std::string name = root.name();
  std::string out = fmt::format(
      "# fish completion for {0}, generated by `{0} completion fish` from {0}'s command definitions.\n"
      "# Install: {0} completion fish > ~/.config/fish/completions/{0}.fish\n\n",
      name);
  out += fish_helpers("__" + ident(name), commands);
  out += fmt::format("# No file names unless a command or an option takes them.\ncomplete -c {} -f\n", fish_quote(name));
  for (const CommandInfo* c : commands) out += fish_command_lines(name, *c);
  return out;
}

}  // namespace ferry::cli
