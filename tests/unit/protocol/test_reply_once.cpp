// Reply-exactly-once: a second reply is dropped, a forgotten one answers -32603, moves transfer
// the obligation.
#define BOOST_TEST_MODULE reply_once
#include <boost/test/unit_test.hpp>

#include <vector>

#include "protocol/reply_once.hpp"

using namespace ferry::protocol;

BOOST_AUTO_TEST_CASE(second_reply_is_dropped_and_reported) {
  std::vector<json> out;
  std::vector<std::string> misuse;
  {
    ReplyOnce r(json(1), "m", [&](json j) { out.push_back(j); }, [&](const std::string& s) { misuse.push_back(s); });
    r(json(5));
    r(json(6));
    BOOST_TEST(r.replied());
  }
  BOOST_REQUIRE_EQUAL(out.size(), 1u);
  BOOST_TEST(out[0]["result"] == 5);
  BOOST_TEST(misuse.size() == 1u);
}

BOOST_AUTO_TEST_CASE(unanswered_handle_replies_internal_error) {
  std::vector<json> out;
  { ReplyOnce r(json("a"), "m", [&](json j) { out.push_back(j); }); }
  BOOST_REQUIRE_EQUAL(out.size(), 1u);
  BOOST_TEST(out[0]["id"] == "a");
  BOOST_TEST(out[0]["error"]["code"] == error_code::kInternalError);
}

BOOST_AUTO_TEST_CASE(moved_handle_replies_once) {
  std::vector<json> out;
  {
    ReplyOnce a(json(2), "m", [&](json j) { out.push_back(j); });
    ReplyOnce b(std::move(a));
    b(std::unexpected(ResponseError{-1, "x", {}}));
  }
  BOOST_REQUIRE_EQUAL(out.size(), 1u);
  BOOST_TEST(out[0]["error"]["code"] == -1);
}
