// Body encodings: see codec.hpp.
#include "protocol/codec.hpp"

#include "protocol/json_parse.hpp"

namespace ferry::protocol {

using json = nlohmann::json;

std::expected<json, std::string> decode_body(std::string_view body, Encoding encoding, std::size_t max_depth) {
  json root;
  // Neither the parser (recursive for CBOR) nor later copies can blow the stack past max_depth.
  DepthLimitedBuilder sax(root, max_depth);
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
  if (!ok) return std::unexpected(sax.what().empty() ? std::string("parse error") : sax.what());
  return root;
}

std::string encode_body(const json& value, Encoding encoding) {
  if (encoding == Encoding::json) return value.dump(-1, ' ', false, json::error_handler_t::replace);
  std::vector<std::uint8_t> bytes = json::to_cbor(value);
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace ferry::protocol
