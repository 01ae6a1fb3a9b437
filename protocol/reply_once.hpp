// Reply-exactly-once: every request gets one response, whatever its handler does. A second
// reply is dropped (and reported), a handle destroyed without replying answers -32603, so a
// client never waits forever on a request a buggy handler forgot.
#pragma once

#include <expected>
#include <functional>
#include <string>

#include "protocol/jsonrpc.hpp"

namespace ferry::protocol {

class ReplyOnce {
 public:
  // `deliver` receives the complete response message.
  using Deliver = std::function<void(json response)>;
  using Misuse = std::function<void(const std::string& what)>;

  ReplyOnce(RequestId id, std::string method, Deliver deliver, Misuse on_misuse = {});
  ReplyOnce(ReplyOnce&& other) noexcept;
  ReplyOnce& operator=(ReplyOnce&& other) noexcept;
  ReplyOnce(const ReplyOnce&) = delete;
  ReplyOnce& operator=(const ReplyOnce&) = delete;
  ~ReplyOnce();

  void operator()(std::expected<json, ResponseError> outcome);
  bool replied() const { return replied_; }
  const RequestId& id() const { return id_; }
  const std::string& method() const { return method_; }

 private:
  void finish_unanswered();
  RequestId id_;
  std::string method_;
  Deliver deliver_;
  Misuse on_misuse_;
  bool replied_ = false;
};

}  // namespace ferry::protocol
