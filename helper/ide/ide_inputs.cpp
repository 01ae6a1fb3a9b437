// The command lines and names shared by the PyCharm and VS Code files.
#include "helper/ide/ide_inputs.hpp"

#include <filesystem>

#include "common/path_within.hpp"
#include "protocol/shell_words.hpp"

namespace ferry::ide {

std::string entry_title(const deploy::LaunchEntry& entry) { return std::string(kEntryPrefix) + entry.name; }

std::vector<std::string> launch_args(const IdeInputs& in, const deploy::LaunchEntry& entry, Ide ide) {
  if (entry.kind == "train") return {"train", "--launch", entry.name};
  if (entry.kind == "run") return {"run", "--launch", entry.name};
  if (ide == Ide::vscode) return {"debug", "--launch", entry.name};
  return {"debug", "--launch", entry.name, "--pycharm", std::to_string(in.pycharm_port)};
}

std::string shell_word(std::string_view word) {
  const bool plain = !word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                             "0123456789_-.,/:=@%+") == std::string_view::npos;
  // Bare when plain, for a readable command line; the quoting itself is protocol's one rule.
  return plain ? std::string(word) : protocol::shell_quote(word);
}

std::string script_text(std::string_view ferry, const std::vector<std::string>& args, bool powershell) {
  if (!powershell) {
    std::string s = shell_word(ferry);
    for (const auto& a : args) s.append(" ").append(shell_word(a));
    return s;
  }
  auto word = [](std::string_view w) {
    std::string out(1, '\'');
    for (char c : w) out.append(c == '\'' ? 2 : 1, c);
    return out + '\'';
  };
  std::string s = "& " + word(ferry);
  for (const auto& a : args) s.append(" ").append(word(a));
  return s + "; exit $LASTEXITCODE";
}

std::string ide_word(std::string_view word) {
  if (!word.empty() && word.find_first_of(" \t\"") == std::string_view::npos) return std::string(word);
  std::string out(1, '"');
  for (char c : word) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string project_relative(std::string_view local, const std::string& root, std::string_view macro) {
  const auto rel = ferry::posix::relative_to(std::filesystem::path(local), root).generic_string();
  if (rel.empty() || rel == ".." || rel.starts_with("../")) return std::string(local);
  std::string out(macro);
  if (rel != ".") out.append("/").append(rel);
  return out;
}

}  // namespace ferry::ide
