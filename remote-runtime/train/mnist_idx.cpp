// IDX parsing and the MNIST file pair check.
#include "remote-runtime/train/mnist_idx.hpp"

#include <limits>

namespace ferry::train {

std::size_t idx_type_size(IdxType type) {
  switch (type) {
    case IdxType::u8:
    case IdxType::i8: return 1;
    case IdxType::i16: return 2;
    case IdxType::i32:
    case IdxType::f32: return 4;
    case IdxType::f64: return 8;
  }
  return 0;
}

Expected<IdxHeader, std::string> parse_idx_header(Span<const std::byte> b, std::uint64_t file_size) {
  if (b.size() > file_size) return Unexpected("header buffer larger than the file");
  if (b.size() < 4) return Unexpected("not an IDX file: shorter than the magic number");
  if (b[0] != std::byte{0} || b[1] != std::byte{0}) return Unexpected("not an IDX file: bad magic");
  const auto code = static_cast<std::uint8_t>(b[2]);
  if (code != 0x08 && code != 0x09 && code != 0x0B && code != 0x0C && code != 0x0D && code != 0x0E) {
    return Unexpected("not an IDX file: unknown element type 0x" + std::to_string(code));
  }
  const int rank = static_cast<int>(b[3]);
  if (rank < 1 || rank > 8) return Unexpected("IDX rank " + std::to_string(rank) + " is not 1..8");
  IdxHeader h;
  h.type = static_cast<IdxType>(code);
  h.data_offset = 4 + 4 * static_cast<std::uint64_t>(rank);
  if (b.size() < h.data_offset) return Unexpected("truncated IDX header");
  const std::uint64_t elem = idx_type_size(h.type);
  const std::uint64_t available = (file_size - std::min(file_size, h.data_offset)) / elem;
  std::uint64_t elements = 1;
  bool zero = false;
  for (int i = 0; i < rank; ++i) {
    const std::size_t at = 4 + 4 * static_cast<std::size_t>(i);
    const std::uint64_t d = static_cast<std::uint64_t>(b[at]) << 24 | static_cast<std::uint64_t>(b[at + 1]) << 16 |
                            static_cast<std::uint64_t>(b[at + 2]) << 8 | static_cast<std::uint64_t>(b[at + 3]);
    h.dims.push_back(static_cast<std::int64_t>(d));
    if (d == 0) zero = true;
    if (!zero) {
      if (elements > available / d) return Unexpected("IDX dimensions need more data than the file holds");
      elements *= d;
    }
  }
  if (zero) elements = 0;
  h.data_bytes = elements * elem;
  if (h.data_offset + h.data_bytes != file_size) {
    return Unexpected("IDX file size " + std::to_string(file_size) + " does not match its header (" + std::to_string(h.data_offset) +
                           " + " + std::to_string(h.data_bytes) + " data bytes)");
  }
  return h;
}

Expected<IdxFile, std::string> IdxFile::open(const std::filesystem::path& file) {
  auto map = MappedFile::open(file);
  if (!map) return Unexpected(map.error());
  auto header = parse_idx_header(map->bytes(), map->size());
  if (!header) return Unexpected(file.string() + ": " + header.error());
  return IdxFile(std::move(*map), std::move(*header));
}

namespace {

Expected<std::filesystem::path, std::string> find_idx(const std::filesystem::path& dir, const std::string& prefix, const std::string& kind) {
  std::error_code ec;
  for (const std::string& name : {prefix + "-" + kind + "-ubyte", prefix + "-" + kind + ".ubyte",
                                  prefix + "-" + kind.substr(0, kind.find('-')) + "." + kind.substr(kind.find('-') + 1) + "-ubyte"}) {
    if (std::filesystem::is_regular_file(dir / name, ec)) return dir / name;
  }
  return Unexpected("no " + prefix + "-" + kind + "-ubyte in " + dir.string() + " (gzip'd files must be unpacked first)");
}

}  // namespace

Expected<MnistSplit, std::string> load_mnist_split(const std::filesystem::path& dir, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  auto images_path = find_idx(dir, prefix, "images-idx3");
  if (!images_path) return Unexpected(images_path.error());
  auto labels_path = find_idx(dir, prefix, "labels-idx1");
  if (!labels_path) return Unexpected(labels_path.error());
  auto images = IdxFile::open(*images_path);
  if (!images) return Unexpected(images.error());
  auto labels = IdxFile::open(*labels_path);
  if (!labels) return Unexpected(labels.error());
  const auto& ih = images->header();
  const auto& lh = labels->header();
  if (ih.type != IdxType::u8 || ih.dims.size() != 3) return Unexpected(images_path->string() + ": expected u8 images [count, rows, cols]");
  if (lh.type != IdxType::u8 || lh.dims.size() != 1) return Unexpected(labels_path->string() + ": expected u8 labels [count]");
  if (ih.dims[0] != lh.dims[0]) {
    return Unexpected("MNIST " + prefix + ": " + std::to_string(ih.dims[0]) + " images but " + std::to_string(lh.dims[0]) + " labels");
  }
  for (std::byte label : labels->data()) {
    if (static_cast<std::uint8_t>(label) > 9) return Unexpected(labels_path->string() + ": label " + std::to_string(static_cast<int>(label)) + " is not 0..9");
  }
  const std::int64_t count = ih.dims[0], rows = ih.dims[1], cols = ih.dims[2];  // ih dies with the move
  return MnistSplit{std::move(*images), std::move(*labels), count, rows, cols};
}

}  // namespace ferry::train
