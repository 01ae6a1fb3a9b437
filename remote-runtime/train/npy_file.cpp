// .npy header parsing. The header is a Python dict literal; only the three keys NumPy writes
// are accepted, each in the literal forms NumPy produces (quoted strings, True/False, tuples).
#include "remote-runtime/train/npy_file.hpp"

#include <cctype>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string_view>

#include "remote-runtime/train/tensor_file.hpp"

namespace ferry::train {
namespace {

constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

class DictParser {
 public:
  explicit DictParser(std::string_view text) : s_(text) {}

  Expected<std::map<std::string, std::string>, std::string> parse() {
    skip_ws();
    if (!eat('{')) return Unexpected("header is not a dict");
    std::map<std::string, std::string> out;
    while (true) {
      skip_ws();
      if (eat('}')) break;
      auto key = quoted();
      if (!key) return Unexpected("expected a quoted key in the header dict");
      skip_ws();
      if (!eat(':')) return Unexpected("expected ':' after '" + *key + "'");
      skip_ws();
      auto value = raw_value();
      if (!value) return Unexpected("bad value for '" + *key + "'");
      if (out.count(*key) != 0) return Unexpected("duplicate key '" + *key + "'");
      out[*key] = *value;
      skip_ws();
      if (eat(',')) continue;
      skip_ws();
      if (eat('}')) break;
      return Unexpected("expected ',' or '}' in the header dict");
    }
    skip_ws();
    if (pos_ != s_.size()) return Unexpected("trailing bytes after the header dict");
    return out;
  }

 private:
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  bool eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::optional<std::string> quoted() {
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return std::nullopt;
    const char q = s_[pos_++];
    const auto end = s_.find(q, pos_);
    if (end == std::string_view::npos || end - pos_ > 64) return std::nullopt;
    std::string v(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return v;
  }
  // A string is returned with its quotes so the caller can tell 'True' from True.
  std::optional<std::string> raw_value() {
    if (pos_ < s_.size() && (s_[pos_] == '\'' || s_[pos_] == '"')) {
      auto q = quoted();
      if (!q) return std::nullopt;
      std::string v(1, '\'');
      v += *q;
      v += '\'';
      return v;
    }
    if (eat('(')) {
      const auto end = s_.find(')', pos_);
      if (end == std::string_view::npos) return std::nullopt;
      std::string v(1, '(');
      v += s_.substr(pos_, end - pos_);
      v += ')';
      pos_ = end + 1;
      return v;
    }
    const auto start = pos_;
    while (pos_ < s_.size() && std::isalnum(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (pos_ == start) return std::nullopt;
    return std::string(s_.substr(start, pos_ - start));
  }

  std::string_view s_;
  std::size_t pos_ = 0;
};

Expected<std::vector<std::int64_t>, std::string> parse_shape(const std::string& tuple) {
  std::vector<std::int64_t> shape;
  std::string_view s(tuple);
  s.remove_prefix(1);
  s.remove_suffix(1);
  std::size_t i = 0;
  while (true) {
    while (i < s.size() && s[i] == ' ') ++i;
    if (i == s.size()) break;
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return Unexpected("bad shape " + tuple);
    std::uint64_t v = 0;
    std::size_t digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      if (++digits > 18) return Unexpected("shape dimension too large in " + tuple);
      v = v * 10 + static_cast<std::uint64_t>(s[i] - '0');
      ++i;
    }
    // NumPy writes Python ints; older versions wrote longs as 3L.
    if (i < s.size() && s[i] == 'L') ++i;
    shape.push_back(static_cast<std::int64_t>(v));
    while (i < s.size() && s[i] == ' ') ++i;
    if (i == s.size()) break;
    if (s[i] != ',') return Unexpected("bad shape " + tuple);
    ++i;  // a trailing comma, as in (4,), is Python's one-tuple
  }
  if (shape.size() > static_cast<std::size_t>(kTensorMaxRank)) return Unexpected("rank " + std::to_string(shape.size()) + " is over 8");
  return shape;
}

}  // namespace

Expected<NpyHeader, std::string> parse_npy_header(Span<const std::byte> b, std::uint64_t file_size) {
  if (b.size() > file_size) return Unexpected("header buffer larger than the file");
  if (b.size() < 10 || std::memcmp(b.data(), kMagic, sizeof kMagic) != 0) return Unexpected("not a .npy file: bad magic");
  const int major = static_cast<int>(b[6]);
  std::uint64_t header_len = 0, prefix = 0;
  if (major == 1) {
    header_len = static_cast<std::uint64_t>(b[8]) | static_cast<std::uint64_t>(b[9]) << 8;
    prefix = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) return Unexpected("truncated .npy header");
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<std::uint64_t>(b[8 + i]) << (8 * i);
    prefix = 12;
  } else {
    return Unexpected("unsupported .npy format version " + std::to_string(major));
  }
  if (header_len > 1 << 20) return Unexpected(".npy header length " + std::to_string(header_len) + " is implausible");
  if (prefix + header_len > b.size()) return Unexpected("truncated .npy header");
  std::string_view text(reinterpret_cast<const char*>(b.data() + prefix), header_len);
  // Version 1/2 headers are latin-1, version 3 utf-8; the keys and values used are ASCII either way.
  auto dict = DictParser(text).parse();
  if (!dict) return Unexpected(".npy header: " + dict.error());
  for (const auto& [key, value] : *dict) {
    if (key != "descr" && key != "fortran_order" && key != "shape") return Unexpected(".npy header: unknown key '" + key + "'");
  }
  if (dict->count("descr") == 0 || dict->count("fortran_order") == 0 || dict->count("shape") == 0) {
    return Unexpected(".npy header must have descr, fortran_order and shape");
  }
  NpyHeader h;
  const std::string& descr = dict->at("descr");
  if (descr.size() < 2 || descr.front() != '\'') {
    return Unexpected("structured .npy arrays are not supported (descr " + descr + ")");
  }
  h.descr = descr.substr(1, descr.size() - 2);
  const std::string& fortran = dict->at("fortran_order");
  if (fortran == "True") {
    return Unexpected("Fortran-order .npy arrays are not supported: save with np.save(path, np.ascontiguousarray(a))");
  }
  if (fortran != "False") return Unexpected(".npy header: fortran_order must be True or False");
  const std::string& shape = dict->at("shape");
  if (shape.front() != '(') return Unexpected(".npy header: shape must be a tuple");
  auto dims = parse_shape(shape);
  if (!dims) return Unexpected(".npy header: " + dims.error());
  h.shape = std::move(*dims);

  static const struct {
    const char* descr;
    char kind;
    int size;
  } kTypes[] = {{"<f2", 'f', 2}, {"<f4", 'f', 4}, {"<f8", 'f', 8}, {"|i1", 'i', 1}, {"<i4", 'i', 4},
                {"<i8", 'i', 8}, {"|u1", 'u', 1}, {"<u1", 'u', 1}, {"|b1", 'u', 1}};
  bool known = false;
  for (const auto& t : kTypes) {
    if (h.descr == t.descr) {
      h.kind = t.kind;
      h.item_size = t.size;
      known = true;
    }
  }
  if (!known) {
    if (!h.descr.empty() && h.descr[0] == '>') {
      return Unexpected("big-endian .npy arrays are not supported (descr " + h.descr + "): save a.astype('<" + h.descr.substr(1) + "')");
    }
    return Unexpected("unsupported .npy dtype " + h.descr + " (supported: f2 f4 f8 i1 i4 i8 u1 b1, little-endian)");
  }
  h.data_offset = prefix + header_len;
  std::uint64_t elements = 1;
  bool zero = false;
  for (auto d : h.shape) {
    if (d == 0) zero = true;
  }
  const std::uint64_t available = (file_size - std::min(file_size, h.data_offset)) / static_cast<std::uint64_t>(h.item_size);
  if (!zero) {
    for (auto d : h.shape) {
      if (elements > available / static_cast<std::uint64_t>(d)) return Unexpected(".npy shape needs more data than the file holds");
      elements *= static_cast<std::uint64_t>(d);
    }
  } else {
    elements = 0;
  }
  h.data_bytes = elements * static_cast<std::uint64_t>(h.item_size);
  if (h.data_offset + h.data_bytes != file_size) {
    return Unexpected(".npy file size " + std::to_string(file_size) + " does not match its header (" + std::to_string(h.data_offset) +
                           " + " + std::to_string(h.data_bytes) + " data bytes)");
  }
  return h;
}

double npy_element(const NpyHeader& h, const std::byte* data, std::uint64_t index) {
  const std::byte* p = data + index * static_cast<std::uint64_t>(h.item_size);
  switch (h.kind) {
    case 'f':
      if (h.item_size == 2) {
        std::uint16_t v;
        std::memcpy(&v, p, 2);
        return half_to_float(v);
      }
      if (h.item_size == 4) {
        float v;
        std::memcpy(&v, p, 4);
        return v;
      } else {
        double v;
        std::memcpy(&v, p, 8);
        return v;
      }
    case 'i':
      if (h.item_size == 1) return static_cast<double>(static_cast<std::int8_t>(*p));
      if (h.item_size == 4) {
        std::int32_t v;
        std::memcpy(&v, p, 4);
        return v;
      } else {
        std::int64_t v;
        std::memcpy(&v, p, 8);
        return static_cast<double>(v);
      }
    default:
      return static_cast<double>(static_cast<std::uint8_t>(*p));
  }
}

}  // namespace ferry::train
