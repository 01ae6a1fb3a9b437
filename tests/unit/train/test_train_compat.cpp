// The C++17 stand-ins ferry-train uses for C++20/23's library (remote-runtime/train/expected.hpp,
// span.hpp, std_compat.hpp) behave as the standard ones do where the trainer relies on them:
// parse_double gives std::from_chars's answer for every text tried, Expected holds a value or an
// error and moves them, Span views what std::span would.
#define BOOST_TEST_MODULE train_compat
#include <boost/test/unit_test.hpp>

#include <charconv>
#include <cmath>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "remote-runtime/train/expected.hpp"
#include "remote-runtime/train/span.hpp"
#include "remote-runtime/train/parse_double.hpp"
#include "remote-runtime/train/std_compat.hpp"

namespace {

std::optional<double> standard_from_chars(std::string_view s) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool same_answer(const std::optional<double>& a, const std::optional<double>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  if (std::isnan(*a)) return std::isnan(*b) && std::signbit(*a) == std::signbit(*b);
  return *a == *b && std::signbit(*a) == std::signbit(*b);
}

ferry::Expected<std::string, std::string> halve(int n) {
  if (n % 2 != 0) return ferry::Unexpected("odd: " + std::to_string(n));
  return std::to_string(n / 2);
}

ferry::Expected<void, std::string> check(bool ok) {
  if (!ok) return ferry::Unexpected(std::string("not ok"));
  return {};
}

}  // namespace

BOOST_AUTO_TEST_CASE(parse_double_answers_as_from_chars_does) {
  const std::vector<std::string> edges{
      "0", "-0", "1", "1.", ".5", ".", "-", "", "1e", "1e+", "1e-5", "1E5", "+1", " 1", "1 ", "0x1p3", "00012", "1_0",
      "1.7976931348623157e308", "1.7976931348623159e308", "1.8e308", "1e400", "-1e400", "4.9e-324", "2.4703282292062328e-324",
      "2.4703282292062327e-324", "2e-324", "1e-400", "0e-400", "0.000e999999", "inf", "-inf", "INF", "infinity", "Infinity",
      "infinit", "nan", "-nan", "NaN", "nan()", "nan(abc_1)", "nan(a-b)", "nan(", "1e5000000000000000000", "0.1", "3.14159",
      "123456789012345678901234567890", "9007199254740993", "1e-310"};
  for (const auto& s : edges) BOOST_TEST(same_answer(ferry::parse_double(s), standard_from_chars(s)), "text '" << s << "'");
  // Random texts from the characters that matter, and random well-formed numbers across the range.
  std::mt19937 rng(20240601);
  const std::string alphabet = "0123456789.eE+-infaINFAnN()_x ";
  int mismatches = 0;
  for (int i = 0; i < 200000; ++i) {
    std::string s;
    if (i % 2 == 0) {
      for (int k = rng() % 10; k > 0; --k) s += alphabet[rng() % alphabet.size()];
    } else {
      s = std::to_string(rng()) + "." + std::to_string(rng()) + "e" + std::to_string(static_cast<int>(rng() % 700) - 350);
    }
    if (!same_answer(ferry::parse_double(s), standard_from_chars(s)) && ++mismatches <= 10) BOOST_ERROR("text '" << s << "'");
  }
  BOOST_TEST(mismatches == 0);
}

BOOST_AUTO_TEST_CASE(expected_holds_a_value_or_an_error) {
  auto even = halve(8);
  BOOST_TEST_REQUIRE(even.has_value());
  BOOST_TEST(*even == "4");
  BOOST_TEST(even->size() == 1u);
  BOOST_TEST(even.value() == "4");
  BOOST_TEST(even.value_or("x") == "4");
  auto odd = halve(7);
  BOOST_TEST(!odd);
  BOOST_TEST(odd.error() == "odd: 7");  // T and E the same type: the error side, not the value
  BOOST_TEST(odd.value_or("x") == "x");
  BOOST_CHECK_THROW(odd.value(), ferry::BadExpectedAccess);
  BOOST_TEST(check(true).has_value());
  BOOST_TEST(check(false).error() == "not ok");
  BOOST_CHECK_THROW(check(false).value(), ferry::BadExpectedAccess);

  // Move-only values and errors move through.
  ferry::Expected<std::unique_ptr<int>, std::string> owned = std::make_unique<int>(5);
  auto taken = std::move(owned).value();
  BOOST_TEST(*taken == 5);
  ferry::Expected<int, std::unique_ptr<std::string>> failed = ferry::Unexpected(std::make_unique<std::string>("why"));
  auto reason = std::move(failed).error();
  BOOST_TEST(*reason == "why");
  const ferry::Expected<int, std::string> copied = ferry::Expected<int, std::string>(ferry::Unexpected("c string"));
  BOOST_TEST(copied.error() == "c string");
}

BOOST_AUTO_TEST_CASE(span_views_what_std_span_would) {
  std::vector<std::int64_t> shape{2, 3, 4};
  ferry::Span<const std::int64_t> s = shape;
  BOOST_TEST(s.size() == 3u);
  BOOST_TEST(s.data() == shape.data());
  BOOST_TEST(s[2] == 4);
  BOOST_TEST(s.subspan(1).size() == 2u);
  BOOST_TEST(s.subspan(1, 1)[0] == 3);
  BOOST_TEST(s.first(2).back() == 3);
  BOOST_TEST(s.last(1).front() == 4);
  std::int64_t total = 1;
  for (auto v : s) total *= v;
  BOOST_TEST(total == 24);
  // A C++20 caller's std::span converts, and the byte view is the same bytes.
  const std::span<const std::int64_t> standard(shape);
  ferry::Span<const std::byte> bytes = std::as_bytes(standard);
  BOOST_TEST(bytes.size() == 3 * sizeof(std::int64_t));
  BOOST_TEST(ferry::as_bytes(s).data() == bytes.data());
  BOOST_TEST(ferry::as_bytes(s).size() == bytes.size());
  BOOST_TEST(ferry::Span<const int>().empty());
}

BOOST_AUTO_TEST_CASE(prefixes_and_bit_cast) {
  BOOST_TEST(ferry::starts_with("cuda:1", "cuda:"));
  BOOST_TEST(!ferry::starts_with("cud", "cuda:"));
  BOOST_TEST(ferry::starts_with("-x", '-'));
  BOOST_TEST(!ferry::starts_with("", '-'));
  BOOST_TEST(ferry::ends_with("ckpt-1.ferry", ".ferry"));
  BOOST_TEST(!ferry::ends_with("ferry", ".ferry"));
  BOOST_TEST(ferry::ends_with("[::1]", ']'));
  BOOST_TEST(ferry::bit_cast<std::uint32_t>(1.0f) == 0x3f800000u);
  BOOST_TEST(ferry::bit_cast<float>(0xbf800000u) == -1.0f);
}
