// What the box has for building and running ferry-train: one shell script run over the link
// (trainer_probe_script), its key=value answer (parse_trainer_probe), and what is missing as one
// line that says how to fix it (trainer_probe_problem). Pure text in and out; no I/O here.
#pragma once

#include <expected>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "protocol/shell_words.hpp"

namespace ferry::training {

struct TrainerProbe {
  std::string home, cache;    // $HOME and the cache root on the box (absolute)
  std::string python;         // the interpreter's path ("" when not found)
  std::string python_torch;   // torch.__version__ the interpreter imports ("" none)
  std::string torch_version;  // of the LibTorch that will be built against ("" none found)
  std::string torch_prefix;   // the directory holding Torch/TorchConfig.cmake
  std::string torch_source;   // "python" or "system"
  std::string torch_headers;  // the include dir holding torch/csrc/api/include/torch/torch.h
  std::string cxx, cxx_version;
  bool cxx17 = false;         // the compiler builds and links C++17 as the pack needs it
  std::string cmake, cmake_version;
  std::string ready;          // the cached ferry-train for this pack and torch, when built
  std::string version;        // its `ferry-train --version`
  bool have_pack = false;     // the pack is already on the box
};

// The probe, for the pack `key` and the project's interpreter; `env` (ferry.json's) is exported
// first, so PATH, CXX, FERRY_TRAIN_CACHE or LIBTORCH there count. The cache root is
// $FERRY_TRAIN_CACHE, else ~/.cache/ferry/train. The error: the interpreter or an env name
// cannot go into a script as it is (see trainer_env_prelude).
std::expected<std::string, std::string> trainer_probe_script(const std::string& interpreter, const std::string& key,
                                                             const std::map<std::string, std::string>& env);

// The shell lines that set up the same environment for later steps (exports, PATH, C=cache, the
// interpreter's words as "$@"). Values are quoted (protocol::shell_quote); env names must be
// variable names and the interpreter is split by protocol::interpreter_words, else an error.
std::expected<std::string, std::string> trainer_env_prelude(const std::string& interpreter,
                                                            const std::map<std::string, std::string>& env);

TrainerProbe parse_trainer_probe(std::string_view output);

// Nothing when a trainer is ready or can be built; else the first thing missing, with the
// command that fixes it.
std::optional<std::string> trainer_probe_problem(const TrainerProbe& probe, const std::string& interpreter);

using protocol::shell_quote;  // protocol/shell_words.hpp

}  // namespace ferry::training
