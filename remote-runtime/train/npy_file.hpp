// NumPy .npy header parsing (format versions 1, 2 and 3) for `ferry-train pack`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "remote-runtime/train/expected.hpp"
#include "remote-runtime/train/span.hpp"

namespace ferry::train {

// The element types pack accepts: little-endian (or byte-sized) f2/f4/f8, i1/i4/i8, u1.
struct NpyHeader {
  std::string descr;      // as written, e.g. "<f4"
  char kind = 'f';        // 'f', 'i' or 'u'
  int item_size = 4;
  std::vector<std::int64_t> shape;
  std::uint64_t data_offset = 0;
  std::uint64_t data_bytes = 0;
};

// Validates magic, version, the header dict and the data size against the whole file.
// Fortran order, big-endian and object/structured dtypes are rejected with a message that says
// how to re-save the array.
Expected<NpyHeader, std::string> parse_npy_header(Span<const std::byte> bytes, std::uint64_t file_size);

// Value of element `index` (caller keeps it in range) as a double.
double npy_element(const NpyHeader& header, const std::byte* data, std::uint64_t index);

}  // namespace ferry::train
