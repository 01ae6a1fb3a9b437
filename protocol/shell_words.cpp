// Splitting settings into words and quoting words for a POSIX shell: see shell_words.hpp.
#include "protocol/shell_words.hpp"

#include <array>

namespace ferry::protocol {

namespace {

// Programs that run their argument as a command line. Wrappers (env, conda run, nice) are fine
// as interpreter words; a shell anywhere among them is not.
constexpr std::array<std::string_view, 17> kShells{"sh",  "bash", "dash", "zsh",  "ksh",   "ksh93",   "mksh",   "pdksh", "ash",
                                                  "csh", "tcsh", "fish", "yash", "posh",  "rbash",   "busybox", "toybox"};

bool names_a_shell(std::string_view word) {
  // Each blank-separated piece too: `env -S "sh -c CMD"` splits its word again.
  for (std::size_t at = 0; at < word.size();) {
    const std::size_t end = std::min(word.find_first_of(" \t\n", at), word.size());
    std::string_view piece = word.substr(at, end - at);
    at = end + 1;
    if (const auto slash = piece.rfind('/'); slash != std::string_view::npos) piece.remove_prefix(slash + 1);
    for (auto shell : kShells)
      if (piece == shell) return true;
  }
  return false;
}

}  // namespace

std::string shell_quote(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '\'';
  for (char c : text) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  out += '\'';
  return out;
}

std::string shell_quote_home(std::string_view path) {
  if (path == "~") return "\"$HOME\"";
  if (path.starts_with("~/")) return "\"$HOME\"/" + shell_quote(path.substr(2));
  return shell_quote(path);
}

std::string shell_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& word : argv) {
    if (!out.empty()) out += ' ';
    out += shell_quote(word);
  }
  return out;
}

std::expected<std::vector<std::string>, std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quote == '\'') {
      if (c == '\'') quote = 0;
      else word += c;
    } else if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < text.size() && std::string_view("\"\\$`").find(text[i + 1]) != std::string_view::npos) {
        word += text[++i];
      } else {
        word += c;
      }
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\') {
      if (i + 1 >= text.size()) return std::unexpected("a trailing backslash");
      word += text[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote) return std::unexpected(std::string("an unterminated ") + (quote == '"' ? "double" : "single") + " quote");
  if (in_word) words.push_back(std::move(word));
  return words;
}

std::expected<std::vector<std::string>, std::string> interpreter_words(std::string_view text) {
  auto words = split_words(text);
  if (!words) return std::unexpected(words.error());
  if (words->empty()) return std::unexpected(std::string("it is empty: name the box's Python (e.g. \"python3\")"));
  for (const auto& w : *words)
    if (names_a_shell(w))
      return std::unexpected("it names a shell (" + w + "), which would run its arguments as commands: name the box's Python");
  return words;
}

}  // namespace ferry::protocol
