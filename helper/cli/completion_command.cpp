// `ferry completion bash|zsh|fish` and the hidden `ferry man-page`: print the completion script or
// the roff man page generated from this very app's command definitions (shell_completion.hpp,
// man_page.hpp), so they always match the binary. The build writes them into share/ of the build
// tree for packaging (helper/cli/CMakeLists.txt).
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "ferry/version.hpp"
#include "helper/cli/commands.hpp"
#include "helper/cli/man_page.hpp"
#include "helper/cli/shell_completion.hpp"

namespace ferry::cli {

namespace {

// The generators need the whole tree, not the sub-command the callback belongs to.
const CLI::App& root_of(const CLI::App& cmd) {
  const CLI::App* app = &cmd;
  while (app->get_parent() != nullptr) app = app->get_parent();
  return *app;
}

constexpr const char* kInstallHelp =
    "Install (then open a new shell):\n"
    "  bash: ferry completion bash > ~/.local/share/bash-completion/completions/ferry\n"
    "  zsh:  ferry completion zsh > ~/.zfunc/_ferry, with fpath=(~/.zfunc $fpath) before compinit in ~/.zshrc\n"
    "  fish: ferry completion fish > ~/.config/fish/completions/ferry.fish\n"
    "Packages install them where each shell looks by itself.";

}  // namespace

void add_completion_command(CLI::App& app, GlobalOptions&) {
  auto shell = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("completion", "Print the shell completion script for bash, zsh or fish (ferry completion bash > FILE)");
  cmd->add_option("shell", *shell, "The shell to complete for")->check(CLI::IsMember({"bash", "zsh", "fish"}))->required();
  cmd->footer(kInstallHelp);
  cmd->callback([cmd, shell] {
    const CLI::App& root = root_of(*cmd);
    std::cout << (*shell == "bash" ? bash_completion(root) : *shell == "zsh" ? zsh_completion(root) : fish_completion(root));
  });
}

void add_man_page_command(CLI::App& app, GlobalOptions&) {
  auto* cmd = app.add_subcommand("man-page", "Print ferry's man page (roff, section 1), as packages install it");
  cmd->group("");  // hidden: for packaging (the build writes share/man/man1/ferry.1), not for users
  cmd->callback([cmd] { std::cout << man_page(root_of(*cmd), ferry::kVersion); });
}

}  // namespace ferry::cli
