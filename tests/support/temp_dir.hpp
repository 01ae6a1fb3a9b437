// A temporary directory removed with everything in it when the test is done, and the two file
// helpers nearly every file-system test needs. Header-only.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <cstdint>
#include <string>
#include <vector>

namespace ferry::test {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "ferry-test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + tmpl);
    // Canonical, so paths a program prints (after its own realpath) compare equal to ours.
    path_ = std::filesystem::canonical(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::filesystem::path& rel) const { return path_ / rel; }

 private:
  std::filesystem::path path_;
};

// Writes `content` to `file` (parents created, truncated first).
inline void write_file(const std::filesystem::path& file, const std::string& content) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

// The same for raw bytes.
inline void write_file(const std::filesystem::path& file, const std::vector<std::uint8_t>& bytes) {
  write_file(file, std::string(bytes.begin(), bytes.end()));
}

// The whole file as bytes, or none when it cannot be read.
inline std::vector<std::uint8_t> read_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// The whole file, or "" when it cannot be read.
inline std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace ferry::test
