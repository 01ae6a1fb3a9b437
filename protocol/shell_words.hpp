// Words and POSIX shell command lines, the one place for both directions: values from ferry.json
// are split into argument vectors without a shell (split_words, interpreter_words), and where a
// command line for a shell is unavoidable (an SSH exec, a script run on the box) each word is
// quoted by shell_quote, so the shell gives back exactly the words it was handed.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

namespace ferry::protocol {

// 'text', with each ' written as '\'' : any bytes (newlines, $, `, \, non-ASCII) come back from
// sh exactly as given, the empty string as one empty word.
std::string shell_quote(std::string_view text);

// shell_quote, except that "~" and a leading "~/" are left to the shell ("$HOME"/'rest'), for
// paths ferry.json writes relative to the box's home.
std::string shell_quote_home(std::string_view path);

// The words as one command line, each through shell_quote: sh -c of it runs exactly argv.
std::string shell_command(const std::vector<std::string>& argv);

// Splits a setting into words as a POSIX shell would for plain words, single and double quotes
// and backslashes, and nothing else: no expansions, no operators, no globs ("$(x)", ";", "*" are
// characters of a word). "/opt/conda/bin/python -u" -> 2 words.
std::expected<std::vector<std::string>, std::string> split_words(std::string_view text);

// ferry.json's interpreter as the argv ferry puts its own arguments after (-c SCRIPT, -m MODULE,
// a script): split_words, at least one word, and no shell among the words (sh, bash, ...: one
// would run its -c word as a command line, which no interpreter setting may carry).
std::expected<std::vector<std::string>, std::string> interpreter_words(std::string_view text);

}  // namespace ferry::protocol
