// CSV parsing for pack. Numbers are read as std::from_chars reads them (locale-independent).
#include "remote-runtime/train/csv_table.hpp"

#include <charconv>
#include <cmath>
#include <optional>

#include "remote-runtime/train/parse_double.hpp"
#include "remote-runtime/train/std_compat.hpp"

namespace ferry::train {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

std::optional<double> to_number(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  return parse_double(s);  // std::from_chars's answer, also where libstdc++ lacks it for double
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const auto comma = line.find(',', start);
    out.push_back(trim(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

Expected<CsvTable, std::string> parse_csv_table(std::string_view text, CsvHeaderMode mode) {
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 BOM from spreadsheets
  CsvTable t;
  std::size_t pos = 0;
  std::int64_t line_no = 0;
  bool first = true;
  while (pos < text.size()) {
    const auto nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (trim(line).empty()) continue;
    const auto fields = split(line);
    if (first) {
      first = false;
      t.cols = static_cast<std::int64_t>(fields.size());
      bool numeric = true;
      for (auto f : fields) numeric = numeric && to_number(f).has_value();
      const bool is_header = mode == CsvHeaderMode::present || (mode == CsvHeaderMode::detect && !numeric);
      if (is_header) {
        for (auto f : fields) t.header.emplace_back(f);
        continue;
      }
    }
    if (static_cast<std::int64_t>(fields.size()) != t.cols) {
      return Unexpected("line " + std::to_string(line_no) + ": " + std::to_string(fields.size()) + " fields, expected " +
                             std::to_string(t.cols));
    }
    for (std::size_t c = 0; c < fields.size(); ++c) {
      auto v = to_number(fields[c]);
      if (!v) {
        return Unexpected("line " + std::to_string(line_no) + ", column " + std::to_string(c + 1) + ": \"" +
                               std::string(fields[c].substr(0, 40)) + "\" is not a number");
      }
      t.values.push_back(*v);
    }
    ++t.rows;
  }
  if (t.cols == 0 || t.rows == 0) return Unexpected("the CSV has no data rows");
  return t;
}

Expected<std::int64_t, std::string> find_csv_column(const CsvTable& table, std::string_view name_or_index) {
  for (std::size_t i = 0; i < table.header.size(); ++i) {
    if (table.header[i] == name_or_index) return static_cast<std::int64_t>(i);
  }
  std::int64_t index = 0;
  const char* begin = name_or_index.data();
  const char* end = begin + name_or_index.size();
  const auto [p, ec] = std::from_chars(begin, end, index);
  if (ec == std::errc() && p == end && !name_or_index.empty()) {
    if (index < 0) index += table.cols;
    if (index >= 0 && index < table.cols) return index;
    return Unexpected("column index " + std::string(name_or_index) + " is out of range (" + std::to_string(table.cols) + " columns)");
  }
  std::string names;
  for (const auto& h : table.header) {
    if (!names.empty()) names += ", ";
    names += h;
  }
  return Unexpected("no column named \"" + std::string(name_or_index) + "\"" + (names.empty() ? " (the CSV has no header line)" : " (columns: " + names + ")"));
}

}  // namespace ferry::train
