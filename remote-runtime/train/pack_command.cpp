// The pack sub-command: argument parsing (by hand: ferry-train has no CLI library on a GPU box)
// and the .npy / CSV -> .ftensor conversions, streamed in chunks so big arrays need no copy.
#include "remote-runtime/train/pack_command.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "remote-runtime/train/mapped_file.hpp"
#include "remote-runtime/train/npy_file.hpp"
#include "remote-runtime/train/std_compat.hpp"

namespace ferry::train {
namespace {

constexpr std::size_t kChunkBytes = 1 << 20;

constexpr const char* kUsage =
    "usage: ferry-train pack INPUT -o OUT [--labels COL] [--labels-out PATH] [--dtype f32|f16|bf16|i64|i32|u8]\n"
    "                          [--header | --no-header]\n"
    "  INPUT  a .npy array (C order, little-endian f2/f4/f8/i1/i4/i8/u1) or a numeric .csv\n"
    "  OUT    the .ftensor to write; with --labels (CSV) the target column goes to --labels-out\n"
    "         (default OUT with .labels.ftensor)\n";

std::string lower_extension(const std::filesystem::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

// Encodes one value as `dtype` at `out`; integer targets take only whole numbers in range.
bool encode(DType dtype, double v, std::byte* out) {
  auto whole_in = [&](double lo, double hi) { return std::isfinite(v) && std::floor(v) == v && v >= lo && v <= hi; };
  switch (dtype) {
    case DType::f32: {
      const float f = static_cast<float>(v);
      std::memcpy(out, &f, 4);
      return true;
    }
    case DType::f16: {
      const std::uint16_t h = float_to_half(static_cast<float>(v));
      std::memcpy(out, &h, 2);
      return true;
    }
    case DType::bf16: {
      const std::uint16_t h = float_to_bfloat16(static_cast<float>(v));
      std::memcpy(out, &h, 2);
      return true;
    }
    case DType::i64: {
      if (!whole_in(-9.2e18, 9.2e18)) return false;
      const auto i = static_cast<std::int64_t>(v);
      std::memcpy(out, &i, 8);
      return true;
    }
    case DType::i32: {
      if (!whole_in(-2147483648.0, 2147483647.0)) return false;
      const auto i = static_cast<std::int32_t>(v);
      std::memcpy(out, &i, 4);
      return true;
    }
    case DType::u8: {
      if (!whole_in(0, 255)) return false;
      *out = static_cast<std::byte>(static_cast<std::uint8_t>(v));
      return true;
    }
  }
  return false;
}

template <typename Get>
Expected<void, std::string> write_converted(TensorFileWriter& w, DType dtype, std::uint64_t count, Get get) {
  const std::size_t size = dtype_size(dtype);
  std::vector<std::byte> chunk;
  chunk.reserve(kChunkBytes);
  for (std::uint64_t i = 0; i < count; ++i) {
    const double v = get(i);
    chunk.resize(chunk.size() + size);
    if (!encode(dtype, v, chunk.data() + chunk.size() - size)) {
      std::ostringstream msg;
      msg << "element " << i << " (" << v << ") cannot be stored as " << dtype_name(dtype);
      return Unexpected(msg.str());
    }
    if (chunk.size() + size > kChunkBytes) {
      if (auto r = w.write(chunk); !r) return r;
      chunk.clear();
    }
  }
  return w.write(chunk);
}

DType natural_dtype(const NpyHeader& h) {
  if (h.kind == 'f') return h.item_size == 2 ? DType::f16 : DType::f32;
  if (h.kind == 'i') return h.item_size == 8 ? DType::i64 : DType::i32;
  return DType::u8;
}

bool same_layout(const NpyHeader& h, DType d) {
  return (h.kind == 'f' && h.item_size == 2 && d == DType::f16) || (h.kind == 'f' && h.item_size == 4 && d == DType::f32) ||
         (h.kind == 'i' && h.item_size == 8 && d == DType::i64) || (h.kind == 'i' && h.item_size == 4 && d == DType::i32) ||
         (h.kind == 'u' && h.item_size == 1 && d == DType::u8);
}

}  // namespace

std::filesystem::path default_labels_path(const std::filesystem::path& output) {
  std::filesystem::path p = output;
  if (lower_extension(p) == ".ftensor") p.replace_extension();
  p += ".labels.ftensor";
  return p;
}

Expected<std::vector<PackedFile>, std::string> pack_npy(const PackOptions& o) {
  if (o.labels_column) return Unexpected("--labels applies to CSV input; pack a .npy of targets as its own file");
  auto map = MappedFile::open(o.input);
  if (!map) return Unexpected(map.error());
  auto h = parse_npy_header(map->bytes(), map->size());
  if (!h) return Unexpected(o.input.string() + ": " + h.error());
  if (h->shape.empty()) return Unexpected(o.input.string() + ": a 0-d (scalar) array is not a dataset");
  const DType dtype = o.dtype.value_or(natural_dtype(*h));
  auto w = TensorFileWriter::create(o.output, dtype, h->shape);
  if (!w) return Unexpected(w.error());
  const std::byte* data = map->bytes().data() + h->data_offset;
  const std::uint64_t count = h->data_bytes / static_cast<std::uint64_t>(h->item_size);
  if (same_layout(*h, dtype)) {
    for (std::uint64_t off = 0; off < h->data_bytes; off += kChunkBytes) {
      const auto n = std::min<std::uint64_t>(kChunkBytes, h->data_bytes - off);
      if (auto r = w->write({data + off, static_cast<std::size_t>(n)}); !r) return Unexpected(r.error());
    }
  } else if (auto r = write_converted(*w, dtype, count, [&](std::uint64_t i) { return npy_element(*h, data, i); }); !r) {
    return Unexpected(o.input.string() + ": " + r.error());
  }
  if (auto r = w->commit(); !r) return Unexpected(r.error());
  return std::vector<PackedFile>{{o.output, dtype, h->shape}};
}

Expected<std::vector<PackedFile>, std::string> pack_csv(const PackOptions& o) {
  std::ifstream in(o.input, std::ios::binary);
  if (!in) return Unexpected("cannot open " + o.input.string());
  std::ostringstream text;
  text << in.rdbuf();
  auto table = parse_csv_table(text.str(), o.header);
  if (!table) return Unexpected(o.input.string() + ": " + table.error());
  std::optional<std::int64_t> label_col;
  if (o.labels_column) {
    auto c = find_csv_column(*table, *o.labels_column);
    if (!c) return Unexpected(o.input.string() + ": " + c.error());
    if (table->cols < 2) return Unexpected(o.input.string() + ": the label column is the only column");
    label_col = *c;
  }
  const std::int64_t rows = table->rows, cols = table->cols;
  const std::int64_t feature_cols = label_col ? cols - 1 : cols;
  const DType dtype = o.dtype.value_or(DType::f32);
  std::vector<PackedFile> out;
  {
    const std::vector<std::int64_t> shape = {rows, feature_cols};
    auto w = TensorFileWriter::create(o.output, dtype, shape);
    if (!w) return Unexpected(w.error());
    auto r = write_converted(*w, dtype, static_cast<std::uint64_t>(rows * feature_cols), [&](std::uint64_t i) {
      const auto row = static_cast<std::int64_t>(i) / feature_cols;
      auto col = static_cast<std::int64_t>(i) % feature_cols;
      if (label_col && col >= *label_col) ++col;  // skip over the label column
      return table->values[static_cast<std::size_t>(row * cols + col)];
    });
    if (!r) return Unexpected(o.input.string() + ": " + r.error());
    if (auto c = w->commit(); !c) return Unexpected(c.error());
    out.push_back({o.output, dtype, shape});
  }
  if (label_col) {
    // Whole-number targets are class indices (i64, what cross-entropy takes); others regress (f32).
    bool integral = true;
    for (std::int64_t r = 0; r < rows && integral; ++r) {
      const double v = table->values[static_cast<std::size_t>(r * cols + *label_col)];
      integral = std::isfinite(v) && std::floor(v) == v;
    }
    const DType label_dtype = integral ? DType::i64 : DType::f32;
    const auto path = o.labels_output.value_or(default_labels_path(o.output));
    const std::vector<std::int64_t> shape = {rows};
    auto w = TensorFileWriter::create(path, label_dtype, shape);
    if (!w) return Unexpected(w.error());
    auto r = write_converted(*w, label_dtype, static_cast<std::uint64_t>(rows),
                             [&](std::uint64_t i) { return table->values[static_cast<std::size_t>(static_cast<std::int64_t>(i) * cols + *label_col)]; });
    if (!r) return Unexpected(r.error());
    if (auto c = w->commit(); !c) return Unexpected(c.error());
    out.push_back({path, label_dtype, shape});
  }
  return out;
}

Expected<std::vector<PackedFile>, std::string> pack(const PackOptions& o) {
  const std::string ext = lower_extension(o.input);
  if (ext == ".npy") return pack_npy(o);
  if (ext == ".csv") return pack_csv(o);
  return Unexpected(o.input.string() + ": unknown input type (want .npy or .csv)");
}

int run_pack(const std::vector<std::string>& args) {
  PackOptions o;
  bool have_input = false;
  auto usage_error = [](const std::string& message) {
    std::cerr << "ferry-train pack: " << message << "\n" << kUsage;
    return 2;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::optional<std::string> {
      if (i + 1 >= args.size()) return std::nullopt;
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (a == "-o" || a == "--output") {
      auto v = value();
      if (!v) return usage_error(a + " needs a path");
      o.output = *v;
    } else if (a == "--labels") {
      auto v = value();
      if (!v) return usage_error("--labels needs a column name or index");
      o.labels_column = *v;
    } else if (a == "--labels-out") {
      auto v = value();
      if (!v) return usage_error("--labels-out needs a path");
      o.labels_output = *v;
    } else if (a == "--dtype") {
      auto v = value();
      if (!v) return usage_error("--dtype needs a type");
      auto d = parse_dtype(*v);
      if (!d) return usage_error("unknown dtype \"" + *v + "\" (f32, f16, bf16, i64, i32, u8)");
      o.dtype = *d;
    } else if (a == "--header") {
      o.header = CsvHeaderMode::present;
    } else if (a == "--no-header") {
      o.header = CsvHeaderMode::absent;
    } else if (starts_with(a, "-") && a != "-") {
      return usage_error("unknown option " + a);
    } else if (!have_input) {
      o.input = a;
      have_input = true;
    } else {
      return usage_error("more than one input (" + o.input.string() + ", " + a + ")");
    }
  }
  if (!have_input) return usage_error("no INPUT given");
  if (o.output.empty()) return usage_error("no output given (-o OUT)");
  auto packed = pack(o);
  if (!packed) {
    std::cerr << "ferry-train pack: " << packed.error() << "\n";
    return 1;
  }
  for (const auto& f : *packed) {
    std::cout << "wrote " << f.path.string() << ": " << dtype_name(f.dtype) << " [";
    for (std::size_t i = 0; i < f.shape.size(); ++i) std::cout << (i ? ", " : "") << f.shape[i];
    std::cout << "]\n";
  }
  return 0;
}

int run_pack(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return run_pack(args);
}

}  // namespace ferry::train
