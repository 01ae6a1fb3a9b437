// Trees the sync benchmarks build: text-like files (lowercase words and newlines, compressible about
// as much as source code) in a fixed seeded layout, so bench/sync_vs_rsync and bench/wan measure
// the same tree.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <fmt/format.h>

namespace ferry::bench {

inline void fill_text(std::string& buf, std::mt19937_64& rng) {
  for (std::size_t i = 0; i < buf.size(); ++i) {
    std::uint64_t r = rng();
    buf[i] = (r & 15) == 0 ? ((r >> 4) & 7) == 0 ? '\n' : ' ' : static_cast<char>('a' + (r >> 8) % 26);
  }
}

inline void write_file(const std::filesystem::path& p, const std::string& content) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << content;
}

// `files` files of 64 to 64 + max_size bytes under d000/s00/ ... d099/s09/.
inline void make_small_tree(const std::filesystem::path& root, std::uint64_t files, std::size_t max_size, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::string buf;
  for (std::uint64_t i = 0; i < files; ++i) {
    buf.resize(64 + rng() % max_size);
    fill_text(buf, rng);
    write_file(root / fmt::format("d{:03}/s{:02}/f{}.py", i % 100, (i / 100) % 10, i), buf);
  }
}

inline void make_big_text_file(const std::filesystem::path& p, std::uint64_t bytes, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  std::string buf(1u << 20, '\0');
  for (std::uint64_t done = 0; done < bytes; done += buf.size()) {
    fill_text(buf, rng);
    out.write(buf.data(), static_cast<std::streamsize>(std::min<std::uint64_t>(buf.size(), bytes - done)));
  }
}

}  // namespace ferry::bench
