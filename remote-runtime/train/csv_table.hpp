// Numeric CSV for `ferry-train pack`: comma-separated numbers, an optional header line, every
// row the same width. Errors name the line and column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "remote-runtime/train/expected.hpp"

namespace ferry::train {

enum class CsvHeaderMode { detect, present, absent };

struct CsvTable {
  std::vector<std::string> header;  // empty without a header line
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::vector<double> values;       // row-major, rows * cols
};

// detect: the first line is a header when any of its fields is not a number.
Expected<CsvTable, std::string> parse_csv_table(std::string_view text, CsvHeaderMode mode = CsvHeaderMode::detect);

// A label column given by header name, else by 0-based index (negative counts from the end).
Expected<std::int64_t, std::string> find_csv_column(const CsvTable& table, std::string_view name_or_index);

}  // namespace ferry::train
