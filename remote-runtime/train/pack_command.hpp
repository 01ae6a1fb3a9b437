// `ferry-train pack INPUT -o OUT [--labels COL] [--labels-out PATH] [--dtype T] [--header|--no-header]`:
// converts a .npy array or a numeric CSV into .ftensor files for the `tensor` data source.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "remote-runtime/train/csv_table.hpp"
#include "remote-runtime/train/expected.hpp"
#include "remote-runtime/train/tensor_file.hpp"

namespace ferry::train {

struct PackOptions {
  std::filesystem::path input;
  std::filesystem::path output;
  std::optional<std::string> labels_column;      // CSV: name or index of the target column
  std::optional<std::filesystem::path> labels_output;  // default: OUT with ".labels.ftensor"
  std::optional<DType> dtype;                    // inputs' dtype; default f32 (CSV) or the .npy's own
  CsvHeaderMode header = CsvHeaderMode::detect;
};

struct PackedFile {
  std::filesystem::path path;
  DType dtype = DType::f32;
  std::vector<std::int64_t> shape;
};

// The default labels path: "data.ftensor" -> "data.labels.ftensor".
std::filesystem::path default_labels_path(const std::filesystem::path& output);

Expected<std::vector<PackedFile>, std::string> pack_npy(const PackOptions& options);
Expected<std::vector<PackedFile>, std::string> pack_csv(const PackOptions& options);
Expected<std::vector<PackedFile>, std::string> pack(const PackOptions& options);  // by extension

// The sub-command: `args` are the words after "pack". Prints one line per written file on stdout,
// errors on stderr. Returns 0, 1 (conversion failed) or 2 (bad usage).
int run_pack(const std::vector<std::string>& args);
// Same, from main's argv with argv[0] being "pack".
int run_pack(int argc, char** argv);

}  // namespace ferry::train
