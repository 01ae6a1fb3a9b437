// Fuzzes ferry-train's dataset file parsers on hostile bytes: the .ftensor header, the .npy
// header, the IDX header and the pack CSV reader. The first byte picks the parser, the rest is
// the file. Whatever parses must describe data that lies inside the input, and every byte of it
// is read (so ASan sees any out-of-bounds claim).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string_view>

#include "remote-runtime/train/csv_table.hpp"
#include "remote-runtime/train/mnist_idx.hpp"
#include "remote-runtime/train/npy_file.hpp"
#include "remote-runtime/train/tensor_file.hpp"

using namespace ferry::train;

namespace {

volatile std::uint8_t g_sink;

void touch(std::span<const std::byte> file, std::uint64_t offset, std::uint64_t bytes) {
  if (offset > file.size() || bytes > file.size() - offset) std::abort();
  std::uint8_t x = 0;
  for (std::uint64_t i = 0; i < bytes; ++i) x ^= static_cast<std::uint8_t>(file[offset + i]);
  g_sink = x;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::span<const std::byte> file(reinterpret_cast<const std::byte*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      if (auto h = parse_tensor_header(file, file.size())) {
        if (h->data_offset % kTensorAlignment != 0) std::abort();
        if (h->data_bytes != h->elements() * dtype_size(h->dtype)) std::abort();
        touch(file, h->data_offset, h->data_bytes);
        // Re-encoding the parsed header must give back the same header bytes.
        const auto again = encode_tensor_header(h->dtype, h->shape);
        if (again.size() != h->data_offset) std::abort();
        for (std::size_t i = 0; i < again.size(); ++i) {
          if (again[i] != file[i]) std::abort();
        }
      }
      // A header read from a prefix must agree with the whole-file read.
      if (file.size() >= 64) {
        auto whole = parse_tensor_header(file, file.size());
        auto prefix = parse_tensor_header(file.first(64), file.size());
        if (whole.has_value() && prefix.has_value() && whole->data_bytes != prefix->data_bytes) std::abort();
      }
      break;
    }
    case 1: {
      if (auto h = parse_npy_header(file, file.size())) {
        touch(file, h->data_offset, h->data_bytes);
        const std::uint64_t count = h->data_bytes / static_cast<std::uint64_t>(h->item_size);
        double sum = 0;
        for (std::uint64_t i = 0; i < count && i < 4096; ++i) sum += npy_element(*h, reinterpret_cast<const std::byte*>(file.data()) + h->data_offset, i);
        g_sink = static_cast<std::uint8_t>(sum != sum);
      }
      break;
    }
    case 2: {
      if (auto h = parse_idx_header(file, file.size())) {
        std::uint64_t n = 1;
        for (auto d : h->dims) n *= static_cast<std::uint64_t>(d);
        if (n * idx_type_size(h->type) != h->data_bytes) std::abort();
        touch(file, h->data_offset, h->data_bytes);
      }
      break;
    }
    case 3: {
      const std::string_view text(reinterpret_cast<const char*>(file.data()), file.size());
      if (auto t = parse_csv_table(text)) {
        if (static_cast<std::int64_t>(t->values.size()) != t->rows * t->cols) std::abort();
        (void)find_csv_column(*t, "0");
        (void)find_csv_column(*t, "label");
      }
      break;
    }
  }
  return 0;
}
