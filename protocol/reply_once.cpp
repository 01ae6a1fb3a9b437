// Reply-exactly-once: see reply_once.hpp.
#include "protocol/reply_once.hpp"

namespace ferry::protocol {

ReplyOnce::ReplyOnce(RequestId id, std::string method, Deliver deliver, Misuse on_misuse)
    : id_(std::move(id)), method_(std::move(method)), deliver_(std::move(deliver)), on_misuse_(std::move(on_misuse)) {}

ReplyOnce::ReplyOnce(ReplyOnce&& other) noexcept
    : id_(std::move(other.id_)),
      method_(std::move(other.method_)),
      deliver_(std::move(other.deliver_)),
      on_misuse_(std::move(other.on_misuse_)),
      replied_(other.replied_) {
  other.replied_ = true;  // the moved-from handle owes nothing
}

ReplyOnce& ReplyOnce::operator=(ReplyOnce&& other) noexcept {
  if (this != &other) {
    finish_unanswered();
    id_ = std::move(other.id_);
    method_ = std::move(other.method_);
    deliver_ = std::move(other.deliver_);
    on_misuse_ = std::move(other.on_misuse_);
    replied_ = other.replied_;
    other.replied_ = true;
  }
  return *this;
}

ReplyOnce::~ReplyOnce() { finish_unanswered(); }

void ReplyOnce::finish_unanswered() {
  if (replied_) return;
  try {
    if (on_misuse_) on_misuse_("handler for " + method_ + " finished without replying");
    (*this)(std::unexpected(
        ResponseError{error_code::kInternalError, "internal error: " + method_ + " finished without a result", {}}));
  } catch (...) {
    replied_ = true;  // called from a destructor: never throw out of it
  }
}

void ReplyOnce::operator()(std::expected<json, ResponseError> outcome) {
  if (replied_) {
    if (on_misuse_) on_misuse_("second reply to " + method_ + " dropped");
    return;
  }
  replied_ = true;
  Response r = outcome ? make_result(id_, std::move(*outcome)) : Response{id_, std::move(outcome.error())};
  if (deliver_) {
    try {
      deliver_(to_json(r));
    } catch (...) {
      // A failed write must not escape a destructor; the transport reports it.
    }
  }
}

}  // namespace ferry::protocol
