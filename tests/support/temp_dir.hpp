// A temporary directory removed with everything in it when the test is done, and the two file
// helpers nearly every file-system test needs. Header-only.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <stdexcept>
#include <cstdint>
#include <string>
#include <vector>

namespace ferry::test {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "ferry-test") {
    // mkdtemp's way on every platform (Windows has none): six random letters or digits, the
    // directory created only if it was not there, and made 0700.
    static constexpr char kLetters[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    for (int attempt = 0; attempt < 100 && path_.empty(); ++attempt) {
      std::string name = prefix + "-";
      for (int i = 0; i < 6; ++i) name += kLetters[rng() % (sizeof kLetters - 1)];
      const auto dir = std::filesystem::temp_directory_path() / name;
      if (!std::filesystem::create_directory(dir)) continue;
      std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
      // Canonical, so paths a program prints (after its own realpath) compare equal to ours.
      path_ = std::filesystem::canonical(dir);
    }
    if (path_.empty()) throw std::runtime_error("cannot make a temporary directory named " + prefix + "-*");
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
