// Body encodings: see codec.hpp.
#include "protocol/codec.hpp"

namespace ferry::protocol {
namespace {

using json = nlohmann::json;

// Builds the DOM like nlohmann's own SAX DOM parser, but stops at max_depth so neither the
// parser (recursive for CBOR) nor later copies can blow the stack.
class BoundedDomSax {
 public:
  BoundedDomSax(json& root, std::size_t max_depth) : dom_(root, false), max_depth_(max_depth) {}

  bool null() { return dom_.null(); }
  bool boolean(bool v) { return dom_.boolean(v); }
  bool number_integer(json::number_integer_t v) { return dom_.number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return dom_.number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) { return dom_.number_float(v, s); }
  bool string(json::string_t& v) { return dom_.string(v); }
  bool binary(json::binary_t& v) { return dom_.binary(v); }
  bool start_object(std::size_t n) { return enter() && dom_.start_object(n); }
  bool key(json::string_t& k) { return dom_.key(k); }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t n) { return enter() && dom_.start_array(n); }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) {
    error_ = ex.what();
    return false;
  }

  bool too_deep() const { return too_deep_; }
  const std::string& error() const { return error_; }

 private:
  bool enter() {
    if (++depth_ > max_depth_) {
      too_deep_ = true;
      return false;
    }
    return true;
  }
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::size_t max_depth_;
  std::size_t depth_ = 0;
  bool too_deep_ = false;
  std::string error_;
};

}  // namespace

std::expected<json, std::string> decode_body(std::string_view body, Encoding encoding, std::size_t max_depth) {
  json root;
  BoundedDomSax sax(root, max_depth);
  bool ok = false;
  try {
    if (encoding == Encoding::json)
      ok = json::sax_parse(body.begin(), body.end(), &sax, json::input_format_t::json, true);
    else
      ok = json::sax_parse(body.begin(), body.end(), &sax, json::input_format_t::cbor, true);
  } catch (const std::exception& e) {
    return std::unexpected(std::string(e.what()));
  }
  if (sax.too_deep())
    return std::unexpected("message nests deeper than " + std::to_string(max_depth) + " levels");
  if (!ok) return std::unexpected(sax.error().empty() ? std::string("parse error") : sax.error());
  return root;
}

std::string encode_body(const json& value, Encoding encoding) {
  if (encoding == Encoding::json) return value.dump(-1, ' ', false, json::error_handler_t::replace);
  std::vector<std::uint8_t> bytes = json::to_cbor(value);
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace ferry::protocol
