// Running a program the agent needs (nvidia-smi, sbatch, squeue, scancel) and reading what it
// printed: argv with no shell, stdin from /dev/null, a deadline after which it is killed.
#pragma once

#include <chrono>
#include <expected>
#include <string>
#include <vector>

namespace ferry::agent {

// Its stdout when it exits 0; otherwise an error with the first line of stderr (or stdout).
// argv[0] is a path, or a name looked up on $PATH.
std::expected<std::string, std::string> capture(const std::vector<std::string>& argv, std::chrono::milliseconds timeout);
// The same with this environment ("NAME=value" each) instead of the agent's own.
std::expected<std::string, std::string> capture(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                                const std::vector<std::string>& env);

}  // namespace ferry::agent
