// .ftensor, .npy, CSV and IDX: round trips, every hostile-header case we can name (plus every
// truncation and single-byte corruption of a valid header), half/bfloat16 rounding, the pack
// command end to end, and, where Debian's numpy is installed, arrays written by numpy itself.
#define BOOST_TEST_MODULE tensor_file
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unistd.h>

#include "remote-runtime/train/csv_table.hpp"
#include "remote-runtime/train/mnist_idx.hpp"
#include "remote-runtime/train/npy_file.hpp"
#include "remote-runtime/train/pack_command.hpp"
#include "remote-runtime/train/tensor_file.hpp"

using namespace ferry::train;
namespace fs = std::filesystem;

namespace {

fs::path test_dir() {
  static const fs::path dir = [] {
    auto d = fs::temp_directory_path() / ("ferry_tensor_file_" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> out(s.size());
  std::memcpy(out.data(), s.data(), s.size());
  return out;
}

void write_bytes(const fs::path& p, const std::vector<std::byte>& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::vector<std::byte> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return bytes_of(s.str());
}

template <typename T>
std::vector<std::byte> raw(const std::vector<T>& v) {
  std::vector<std::byte> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

template <typename T>
std::vector<T> values_of(const TensorFile& t) {
  std::vector<T> out(t.data_bytes() / sizeof(T));
  std::memcpy(out.data(), t.data(), t.data_bytes());
  return out;
}

std::vector<std::byte> valid_ftensor() {
  const std::vector<std::int64_t> shape = {3, 2};
  auto file = encode_tensor_header(DType::f32, shape);
  const auto data = raw(std::vector<float>{1, 2, 3, 4, 5, 6});
  file.insert(file.end(), data.begin(), data.end());
  return file;
}

std::vector<std::byte> npy(const std::string& dict, int major, std::size_t data_bytes) {
  std::string header = dict;
  const std::size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string file = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  if (major == 1) {
    file += static_cast<char>(header.size() & 0xff);
    file += static_cast<char>(header.size() >> 8);
  } else {
    for (int i = 0; i < 4; ++i) file += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  }
  file += header;
  file += std::string(data_bytes, '\x01');
  return bytes_of(file);
}

std::string parse_error(const std::vector<std::byte>& b) {
  auto h = parse_tensor_header(b, b.size());
  return h ? std::string() : h.error();
}

std::vector<std::byte> idx(std::uint8_t type, const std::vector<std::uint32_t>& dims, std::size_t data_bytes, std::uint8_t fill = 1) {
  std::vector<std::byte> b = {std::byte{0}, std::byte{0}, std::byte{type}, static_cast<std::byte>(dims.size())};
  for (auto d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::byte>((d >> s) & 0xff));
  }
  b.insert(b.end(), data_bytes, std::byte{fill});
  return b;
}

}  // namespace

BOOST_AUTO_TEST_CASE(ftensor_round_trip_every_dtype) {
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::u8}) {
    const std::vector<std::int64_t> shape = {5, 3, 2};
    std::vector<std::byte> data(30 * dtype_size(d));
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 7);
    const auto path = test_dir() / ("t_" + std::string(dtype_name(d)) + ".ftensor");
    BOOST_TEST_REQUIRE(write_tensor_file(path, d, shape, data).has_value());
    auto t = TensorFile::open(path);
    BOOST_TEST_REQUIRE(t.has_value(), (t ? "" : t.error()));
    BOOST_TEST((t->dtype() == d));
    BOOST_TEST(t->shape() == shape);
    BOOST_TEST(t->rows() == 5);
    BOOST_TEST(t->row_bytes() == 6 * dtype_size(d));
    BOOST_TEST(reinterpret_cast<std::uintptr_t>(t->data()) % kTensorAlignment == 0u);
    BOOST_TEST(std::memcmp(t->data(), data.data(), data.size()) == 0);
    BOOST_TEST(std::memcmp(t->row(4), data.data() + 4 * t->row_bytes(), t->row_bytes()) == 0);
    BOOST_TEST(parse_dtype(dtype_name(d)).has_value());
  }
  const std::vector<std::int64_t> empty_shape = {0, 4};
  BOOST_TEST_REQUIRE(write_tensor_file(test_dir() / "empty.ftensor", DType::f32, empty_shape, {}).has_value());
  auto e = TensorFile::open(test_dir() / "empty.ftensor");
  BOOST_TEST_REQUIRE(e.has_value());
  BOOST_TEST(e->data_bytes() == 0u);
  BOOST_TEST(!parse_dtype("f64").has_value());
}

BOOST_AUTO_TEST_CASE(ftensor_writer_checks_size_and_cleans_up) {
  const std::vector<std::int64_t> shape = {4};
  const auto path = test_dir() / "short.ftensor";
  {
    auto w = TensorFileWriter::create(path, DType::i32, shape);
    BOOST_TEST_REQUIRE(w.has_value());
    BOOST_TEST(w->write(raw(std::vector<std::int32_t>{1, 2, 3})).has_value());
    auto c = w->commit();
    BOOST_TEST_REQUIRE(!c.has_value());
    BOOST_TEST(c.error().find("needs 16") != std::string::npos, c.error());
  }
  BOOST_TEST(!fs::exists(path));
  for (const auto& entry : fs::directory_iterator(test_dir())) BOOST_TEST(entry.path().string().find(".tmp.") == std::string::npos);
  const std::vector<std::int64_t> neg = {-1};
  BOOST_TEST(!TensorFileWriter::create(path, DType::f32, neg).has_value());
  BOOST_TEST(!TensorFileWriter::create(path, DType::f32, {}).has_value());
}

BOOST_AUTO_TEST_CASE(ftensor_hostile_headers) {
  const auto good = valid_ftensor();
  BOOST_TEST(parse_error(good).empty());
  auto with = [&](std::size_t at, std::uint8_t value) {
    auto b = good;
    b[at] = std::byte{value};
    return parse_error(b);
  };
  BOOST_TEST(with(0, 'X').find("magic") != std::string::npos);
  BOOST_TEST(with(6, 2).find("version") != std::string::npos);
  BOOST_TEST(with(8, 0).find("dtype") != std::string::npos);
  BOOST_TEST(with(8, 7).find("dtype") != std::string::npos);
  BOOST_TEST(with(9, 0).find("rank") != std::string::npos);
  BOOST_TEST(with(9, 9).find("rank") != std::string::npos);
  BOOST_TEST(with(11, 1).find("reserved") != std::string::npos);
  BOOST_TEST(with(16, 65).find("aligned") != std::string::npos);
  BOOST_TEST(with(16, 0).find("overlaps") != std::string::npos);
  BOOST_TEST(with(17, 1).find("beyond") != std::string::npos);  // offset 320 > file size
  BOOST_TEST(with(40, 1).find("padding") != std::string::npos);
  BOOST_TEST(with(24, 2).find("does not match") != std::string::npos);
  BOOST_TEST(with(24, 4).find("more data than the file holds") != std::string::npos);
  {
    auto b = good;  // 2^62 x 2^62 elements: the product must not wrap around to something small
    b[31] = std::byte{0x40};
    b[39] = std::byte{0x40};
    BOOST_TEST(parse_error(b).find("more data than the file holds") != std::string::npos, parse_error(b));
  }
  {
    auto b = good;  // a dimension over int64
    b[31] = std::byte{0x80};
    BOOST_TEST(parse_error(b).find("too large") != std::string::npos);
  }
  {
    auto b = good;
    b.push_back(std::byte{0});  // trailing garbage
    BOOST_TEST(parse_error(b).find("does not match") != std::string::npos);
  }
  // Every truncation and every single-byte change of the header either parses consistently with
  // the file size or is rejected; none may claim data beyond the end.
  for (std::size_t n = 0; n < good.size(); ++n) {
    std::vector<std::byte> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    BOOST_TEST(!parse_tensor_header(cut, cut.size()).has_value());
  }
  for (std::size_t at = 0; at < 64; ++at) {
    for (int v : {0x00, 0x01, 0x3f, 0x40, 0x7f, 0x80, 0xff}) {
      auto b = good;
      b[at] = static_cast<std::byte>(v);
      if (auto h = parse_tensor_header(b, b.size())) BOOST_TEST(h->data_offset + h->data_bytes == b.size());
    }
  }
  // A header-only prefix may be given with the real file size.
  std::vector<std::byte> prefix(good.begin(), good.begin() + 64);
  BOOST_TEST(parse_tensor_header(prefix, good.size()).has_value());
  BOOST_TEST(!parse_tensor_header(good, 10).has_value());  // buffer larger than the claimed file
}

BOOST_AUTO_TEST_CASE(ftensor_open_errors) {
  BOOST_TEST(TensorFile::open(test_dir() / "missing.ftensor").error().find("cannot open") != std::string::npos);
  BOOST_TEST(TensorFile::open(test_dir()).error().find("not a regular file") != std::string::npos);
  write_bytes(test_dir() / "zero.ftensor", {});
  BOOST_TEST(TensorFile::open(test_dir() / "zero.ftensor").error().find("shorter than") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(half_and_bfloat16) {
  BOOST_TEST(float_to_half(1.0f) == 0x3C00);
  BOOST_TEST(float_to_half(-2.0f) == 0xC000);
  BOOST_TEST(float_to_half(65504.0f) == 0x7BFF);
  BOOST_TEST(float_to_half(65520.0f) == 0x7C00);  // rounds to infinity
  BOOST_TEST(float_to_half(std::ldexp(1.0f, -24)) == 0x0001);
  BOOST_TEST(float_to_half(std::ldexp(1.0f, -25)) == 0x0000);  // tie to even
  BOOST_TEST(float_to_half(std::ldexp(3.0f, -26)) == 0x0001);
  BOOST_TEST(float_to_half(1.0f + std::ldexp(1.0f, -11)) == 0x3C00);  // tie to even, down
  BOOST_TEST(float_to_half(1.0f + std::ldexp(3.0f, -11)) == 0x3C02);  // tie to even, up
  BOOST_TEST((float_to_half(std::nanf("")) & 0x7C00) == 0x7C00);
  BOOST_TEST((float_to_half(std::nanf("")) & 0x03FF) != 0);
  int mismatches = 0;
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const bool is_nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF) != 0;
    if (!is_nan && float_to_half(half_to_float(static_cast<std::uint16_t>(h))) != h) ++mismatches;
  }
  BOOST_TEST(mismatches == 0);
  BOOST_TEST(half_to_float(0x0001) == std::ldexp(1.0f, -24));
  BOOST_TEST(float_to_bfloat16(1.0f) == 0x3F80);
  BOOST_TEST(float_to_bfloat16(std::bit_cast<float>(0x3F808000u)) == 0x3F80);  // tie to even, down
  BOOST_TEST(float_to_bfloat16(std::bit_cast<float>(0x3F818000u)) == 0x3F82);  // tie to even, up
  BOOST_TEST(std::isnan(bfloat16_to_float(float_to_bfloat16(std::nanf("")))));
  BOOST_TEST(bfloat16_to_float(0x4049) == std::bit_cast<float>(0x40490000u));
}

BOOST_AUTO_TEST_CASE(npy_headers) {
  auto ok = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 1, 24);
  auto h = parse_npy_header(ok, ok.size());
  BOOST_TEST_REQUIRE(h.has_value(), (h ? "" : h.error()));
  BOOST_TEST(h->descr == "<f4");
  BOOST_TEST(h->shape == (std::vector<std::int64_t>{3, 2}));
  BOOST_TEST(h->data_offset % 64 == 0u);
  auto v2 = npy("{\"descr\": \"<i8\", \"fortran_order\": False, \"shape\": (4,)}", 2, 32);
  BOOST_TEST(parse_npy_header(v2, v2.size()).has_value());
  auto v3 = npy("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2, 2), }", 3, 8);
  BOOST_TEST(parse_npy_header(v3, v3.size()).has_value());
  auto scalar = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 1, 8);
  BOOST_TEST(parse_npy_header(scalar, scalar.size())->shape.empty());

  auto err = [](const std::vector<std::byte>& b) {
    auto r = parse_npy_header(b, b.size());
    return r ? std::string() : r.error();
  };
  BOOST_TEST(err(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }", 1, 24)).find("ascontiguousarray") != std::string::npos);
  BOOST_TEST(err(npy("{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }", 1, 12)).find("big-endian") != std::string::npos);
  BOOST_TEST(err(npy("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", 1, 24)).find("unsupported .npy dtype") != std::string::npos);
  BOOST_TEST(!err(npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }", 1, 12)).empty());
  BOOST_TEST(err(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 1, 20)).find("more data") != std::string::npos);
  BOOST_TEST(err(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 1, 28)).find("does not match") != std::string::npos);
  BOOST_TEST(err(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), 'x': 1}", 1, 24)).find("unknown key") != std::string::npos);
  BOOST_TEST(!err(npy("{'descr': '<f4', 'shape': (3, 2), }", 1, 24)).empty());
  BOOST_TEST(!err(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3,, 2), }", 1, 24)).empty());
  BOOST_TEST(!err(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }", 1, 24)).empty());
  BOOST_TEST(err(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (461168601842738790, 4), }", 1, 24)).find("more data") != std::string::npos);
  BOOST_TEST(err(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 4, 4)).find("version") != std::string::npos);
  auto bad_magic = ok;
  bad_magic[1] = std::byte{'X'};
  BOOST_TEST(err(bad_magic).find("magic") != std::string::npos);
  for (std::size_t n = 0; n < 64; ++n) {
    std::vector<std::byte> cut(ok.begin(), ok.begin() + static_cast<std::ptrdiff_t>(n));
    BOOST_TEST(!parse_npy_header(cut, cut.size()).has_value());
  }
}

BOOST_AUTO_TEST_CASE(csv_tables) {
  auto t = parse_csv_table("a,b,label\n1,2,0\n3.5, -4e2 ,1\r\n\n5,6,2\n");
  BOOST_TEST_REQUIRE(t.has_value(), (t ? "" : t.error()));
  BOOST_TEST(t->header == (std::vector<std::string>{"a", "b", "label"}));
  BOOST_TEST(t->rows == 3);
  BOOST_TEST(t->cols == 3);
  BOOST_TEST(t->values[4] == -400.0);
  BOOST_TEST(*find_csv_column(*t, "label") == 2);
  BOOST_TEST(*find_csv_column(*t, "0") == 0);
  BOOST_TEST(*find_csv_column(*t, "-1") == 2);
  BOOST_TEST(find_csv_column(*t, "5").error().find("out of range") != std::string::npos);
  BOOST_TEST(find_csv_column(*t, "target").error().find("columns: a, b, label") != std::string::npos);

  auto no_header = parse_csv_table("1,2\n3,4\n");
  BOOST_TEST(no_header->header.empty());
  BOOST_TEST(no_header->rows == 2);
  auto forced = parse_csv_table("1,2\n3,4\n", CsvHeaderMode::present);
  BOOST_TEST(forced->rows == 1);
  BOOST_TEST(parse_csv_table("x,y\n1,2\n", CsvHeaderMode::absent).error().find("line 1, column 1") != std::string::npos);
  BOOST_TEST(parse_csv_table("1,2\n3\n").error().find("line 2: 1 fields, expected 2") != std::string::npos);
  BOOST_TEST(parse_csv_table("1,2\n3,abc\n").error().find("line 2, column 2") != std::string::npos);
  BOOST_TEST(parse_csv_table("1,2\n3,\n").error().find("line 2, column 2") != std::string::npos);
  BOOST_TEST(!parse_csv_table("a,b\n").has_value());
  BOOST_TEST(!parse_csv_table("").has_value());
  BOOST_TEST(parse_csv_table("\xEF\xBB\xBFx\n1\n")->header[0] == "x");
}

BOOST_AUTO_TEST_CASE(idx_and_mnist) {
  const auto dir = test_dir() / "mnist";
  fs::create_directories(dir);
  write_bytes(dir / "train-images-idx3-ubyte", idx(0x08, {5, 28, 28}, 5 * 28 * 28, 7));
  auto labels = idx(0x08, {5}, 5);
  for (int i = 0; i < 5; ++i) labels[8 + i] = static_cast<std::byte>(i * 2);
  write_bytes(dir / "train-labels-idx1-ubyte", labels);
  auto split = load_mnist_split(dir, true);
  BOOST_TEST_REQUIRE(split.has_value(), (split ? "" : split.error()));
  BOOST_TEST(split->count == 5);
  BOOST_TEST(split->rows == 28);
  BOOST_TEST(split->image(4)[783] == 7);
  BOOST_TEST(split->label(3) == 6);
  BOOST_TEST(load_mnist_split(dir, false).error().find("t10k-images-idx3-ubyte") != std::string::npos);

  labels[12] = std::byte{11};
  write_bytes(dir / "train-labels-idx1-ubyte", labels);
  BOOST_TEST(load_mnist_split(dir, true).error().find("label 11") != std::string::npos);
  write_bytes(dir / "train-labels-idx1-ubyte", idx(0x08, {4}, 4));
  BOOST_TEST(load_mnist_split(dir, true).error().find("5 images but 4 labels") != std::string::npos);

  auto i32 = idx(0x0C, {2, 3}, 24);
  auto h = parse_idx_header(i32, i32.size());
  BOOST_TEST_REQUIRE(h.has_value());
  BOOST_TEST(h->dims == (std::vector<std::int64_t>{2, 3}));
  BOOST_TEST(h->data_offset == 12u);
  auto err = [](const std::vector<std::byte>& b) {
    auto r = parse_idx_header(b, b.size());
    return r ? std::string() : r.error();
  };
  BOOST_TEST(err(idx(0x0C, {2, 3}, 25)).find("does not match") != std::string::npos);
  BOOST_TEST(err(idx(0x0C, {2, 3}, 23)).find("more data") != std::string::npos);
  BOOST_TEST(err(idx(0x07, {2}, 2)).find("element type") != std::string::npos);
  BOOST_TEST(err(idx(0x08, {}, 0)).find("rank") != std::string::npos);
  BOOST_TEST(err(idx(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, 8)).find("more data") != std::string::npos);
  auto magic = idx(0x08, {1}, 1);
  magic[0] = std::byte{1};
  BOOST_TEST(err(magic).find("magic") != std::string::npos);
  for (std::size_t n = 0; n < i32.size(); ++n) {
    std::vector<std::byte> cut(i32.begin(), i32.begin() + static_cast<std::ptrdiff_t>(n));
    BOOST_TEST(!parse_idx_header(cut, cut.size()).has_value());
  }
}

BOOST_AUTO_TEST_CASE(pack_csv_end_to_end) {
  const auto dir = test_dir() / "pack_csv";
  fs::create_directories(dir);
  std::ofstream(dir / "iris.csv") << "sepal,petal,species\n5.1,1.4,0\n6.2,4.5,1\n7.7,6.9,2\n";
  BOOST_TEST(run_pack({(dir / "iris.csv").string(), "-o", (dir / "iris.ftensor").string(), "--labels", "species"}) == 0);
  auto x = TensorFile::open(dir / "iris.ftensor");
  auto y = TensorFile::open(dir / "iris.labels.ftensor");
  BOOST_TEST_REQUIRE(x.has_value());
  BOOST_TEST_REQUIRE(y.has_value());
  BOOST_TEST((x->dtype() == DType::f32));
  BOOST_TEST(x->shape() == (std::vector<std::int64_t>{3, 2}));
  BOOST_TEST(values_of<float>(*x) == (std::vector<float>{5.1f, 1.4f, 6.2f, 4.5f, 7.7f, 6.9f}));
  BOOST_TEST((y->dtype() == DType::i64));
  BOOST_TEST(values_of<std::int64_t>(*y) == (std::vector<std::int64_t>{0, 1, 2}));

  // Label by index in the middle, real-valued targets, bf16 features, explicit labels path.
  std::ofstream(dir / "reg.csv") << "1,0.5,10\n2,1.5,20\n";
  BOOST_TEST(run_pack({(dir / "reg.csv").string(), "-o", (dir / "reg.ftensor").string(), "--labels", "1", "--dtype", "bf16",
                       "--labels-out", (dir / "targets.ftensor").string()}) == 0);
  auto rx = TensorFile::open(dir / "reg.ftensor");
  auto ry = TensorFile::open(dir / "targets.ftensor");
  BOOST_TEST_REQUIRE(rx.has_value());
  BOOST_TEST_REQUIRE(ry.has_value());
  BOOST_TEST((rx->dtype() == DType::bf16));
  const auto bf = values_of<std::uint16_t>(*rx);
  BOOST_TEST(bfloat16_to_float(bf[1]) == 10.0f);
  BOOST_TEST(bfloat16_to_float(bf[2]) == 2.0f);
  BOOST_TEST((ry->dtype() == DType::f32));
  BOOST_TEST(values_of<float>(*ry) == (std::vector<float>{0.5f, 1.5f}));

  BOOST_TEST(run_pack({(dir / "reg.csv").string(), "-o", (dir / "u8.ftensor").string(), "--dtype", "u8"}) == 1);  // 0.5 is no u8
  BOOST_TEST(!fs::exists(dir / "u8.ftensor"));
  BOOST_TEST(run_pack({(dir / "iris.csv").string(), "-o", (dir / "x.ftensor").string(), "--labels", "genus"}) == 1);
}

BOOST_AUTO_TEST_CASE(pack_npy_and_usage) {
  const auto dir = test_dir() / "pack_npy";
  fs::create_directories(dir);
  // An f8 array packs to f32 by default.
  auto file = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", 1, 0);
  const auto data = raw(std::vector<double>{0.1, -2.5, 1e30, 3.0});
  file.insert(file.end(), data.begin(), data.end());
  write_bytes(dir / "a.npy", file);
  BOOST_TEST(run_pack({(dir / "a.npy").string(), "-o", (dir / "a.ftensor").string()}) == 0);
  auto a = TensorFile::open(dir / "a.ftensor");
  BOOST_TEST_REQUIRE(a.has_value());
  BOOST_TEST((a->dtype() == DType::f32));
  BOOST_TEST(values_of<float>(*a) == (std::vector<float>{0.1f, -2.5f, 1e30f, 3.0f}));
  BOOST_TEST(run_pack({(dir / "a.npy").string(), "-o", (dir / "a16.ftensor").string(), "--dtype", "f16"}) == 0);
  auto a16 = TensorFile::open(dir / "a16.ftensor");
  BOOST_TEST(values_of<std::uint16_t>(*a16)[2] == 0x7C00);  // 1e30 overflows half: inf

  BOOST_TEST(run_pack({(dir / "a.npy").string(), "-o", (dir / "b.ftensor").string(), "--labels", "0"}) == 1);
  BOOST_TEST(run_pack({(dir / "a.npy").string()}) == 2);
  BOOST_TEST(run_pack({"-o", (dir / "b.ftensor").string()}) == 2);
  BOOST_TEST(run_pack({(dir / "a.npy").string(), "-o", (dir / "b.ftensor").string(), "--dtype", "f64"}) == 2);
  BOOST_TEST(run_pack({(dir / "a.npy").string(), "-o", (dir / "b.ftensor").string(), "--bogus"}) == 2);
  BOOST_TEST(run_pack({(dir / "a.txt").string(), "-o", (dir / "b.ftensor").string()}) == 1);
  BOOST_TEST(run_pack({"--help"}) == 0);
  BOOST_TEST(default_labels_path("out/data.ftensor") == fs::path("out/data.labels.ftensor"));
  BOOST_TEST(default_labels_path("out/data") == fs::path("out/data.labels.ftensor"));
  char a0[] = "pack", a1[] = "--help";
  char* argv[] = {a0, a1};
  BOOST_TEST(run_pack(2, argv) == 0);
}

#ifdef FERRY_HAVE_NUMPY
// Arrays written by numpy (format versions 1, 2 and 3; f4, f8, i8, i4, u1, i1), packed, and
// compared byte for byte with numpy's own conversion to the target dtype.
BOOST_AUTO_TEST_CASE(numpy_cross_check) {
  const auto dir = test_dir() / "numpy";
  fs::create_directories(dir);
  const std::string script = R"PY(
import sys, numpy as np
from numpy.lib import format as npf
d = sys.argv[1]
rng = np.random.default_rng(5)
cases = {
  'f4': (rng.standard_normal((64, 3)).astype('<f4') * 1000, (1, 0), 'float32'),
  'f8': (rng.standard_normal((33,)).astype('<f8') * 1e5, (2, 0), 'float32'),
  'i8': (rng.integers(-2**40, 2**40, (4, 5, 6)).astype('<i8'), (3, 0), 'int64'),
  'i4': (rng.integers(-2**31, 2**31 - 1, (10, 2)).astype('<i4'), (1, 0), 'int32'),
  'u1': (rng.integers(0, 256, (28, 28)).astype('u1'), (1, 0), 'uint8'),
  'i1': (rng.integers(-128, 128, (9,)).astype('i1'), (2, 0), 'int32'),
  'h16': (np.concatenate([rng.standard_normal(200) * 300, [1e-6, 6e-8, 3e-8, 65519.0, 65520.0, 1e9, -0.0]]).astype('<f4'), (1, 0), 'float16'),
}
for name, (a, version, target) in cases.items():
    with open(f'{d}/{name}.npy', 'wb') as f:
        npf.write_array(f, a, version=version)
    np.ascontiguousarray(a.astype(target)).tofile(f'{d}/{name}.expect')
np.save(f'{d}/fortran.npy', np.asfortranarray(np.ones((3, 4), dtype='<f4')))
)PY";
  std::ofstream(dir / "make.py") << script;
  const std::string cmd = "/usr/bin/python3 " + (dir / "make.py").string() + " " + dir.string();
  BOOST_TEST_REQUIRE(std::system(cmd.c_str()) == 0);
  for (const std::string name : {"f4", "f8", "i8", "i4", "u1", "i1", "h16"}) {
    std::vector<std::string> args = {(dir / (name + ".npy")).string(), "-o", (dir / (name + ".ftensor")).string()};
    if (name == "h16") args.insert(args.end(), {"--dtype", "f16"});
    BOOST_TEST_REQUIRE(run_pack(args) == 0, name);
    auto t = TensorFile::open(dir / (name + ".ftensor"));
    BOOST_TEST_REQUIRE(t.has_value(), name);
    const auto expect = read_bytes(dir / (name + ".expect"));
    BOOST_TEST(t->data_bytes() == expect.size(), name);
    BOOST_TEST(std::memcmp(t->data(), expect.data(), std::min<std::size_t>(expect.size(), t->data_bytes())) == 0, name);
  }
  auto i8 = TensorFile::open(dir / "i8.ftensor");
  BOOST_TEST(i8->shape() == (std::vector<std::int64_t>{4, 5, 6}));
  BOOST_TEST(run_pack({(dir / "fortran.npy").string(), "-o", (dir / "fortran.ftensor").string()}) == 1);
  auto map = MappedFile::open(dir / "fortran.npy");
  auto h = parse_npy_header(map->bytes(), map->size());
  BOOST_TEST_REQUIRE(!h.has_value());
  BOOST_TEST(h.error().find("Fortran-order") != std::string::npos);
}
#else
// Built where numpy was missing at configure time: the cross-check fails saying so, never a pass
// that checked nothing.
BOOST_AUTO_TEST_CASE(numpy_cross_check) {
  BOOST_FAIL("python3-numpy was not found when the build was configured, so numpy's own arrays were not checked: "
             "run scripts/setup.sh (or apt-get install python3-numpy), then cmake the build directory again");
}
#endif

// Golden bytes: the fuzz seed ftensor_f32_3x2 was built by Python's struct module from the
// layout in docs/train-config.md (its first byte selects the fuzzed parser); the writer must
// produce exactly the same file.
BOOST_AUTO_TEST_CASE(ftensor_golden_bytes) {
  auto golden = read_bytes(fs::path(FERRY_TENSOR_CORPUS) / "ftensor_f32_3x2");
  BOOST_TEST_REQUIRE(golden.size() > 1u);
  golden.erase(golden.begin());
  const std::vector<std::int64_t> shape = {3, 2};
  BOOST_TEST_REQUIRE(write_tensor_file(test_dir() / "golden.ftensor", DType::f32, shape, raw(std::vector<float>{1, 2, 3, 4, 5, 6})).has_value());
  BOOST_TEST(read_bytes(test_dir() / "golden.ftensor") == golden);
}
