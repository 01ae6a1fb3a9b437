// Which files of a Python interpreter's package directories make up "the box's Python
// environment" for an editor: sources (.py), stubs (.pyi), the py.typed marker and package
// metadata (*.dist-info/, *.egg-info), never compiled extensions, bytecode or data files. Both
// ends apply it: the agent serves nothing else from a read-only pull source, and the helper's
// env mirror keeps nothing else. Pure string checks on '/'-separated relative paths.
#pragma once

#include <cstdint>
#include <string_view>

namespace ferry::protocol {

// A file that belongs in an env mirror (relative path inside one sys.path entry).
bool is_python_source_file(std::string_view rel_path);

// A directory never worth walking for sources (__pycache__).
bool is_python_source_pruned_dir(std::string_view rel_path);

// Bigger single files are not served from a read-only source (a generated 200 MiB .py is not
// something an editor's analyser reads either).
inline constexpr std::uint64_t kMaxPythonSourceFileBytes = 32ull << 20;

// The package a mirrored path belongs to, for the size cap's report: its first component with
// .py/.pyi and a dist-info's "-VERSION.dist-info" taken off ("torch/nn/x.py" -> "torch",
// "six.py" -> "six", "torch-1.13.dist-info/RECORD" -> "torch").
std::string_view python_package_of(std::string_view rel_path);

}  // namespace ferry::protocol
