// LSP base-protocol framing: see framing.hpp.
#include "protocol/framing.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

namespace ferry::protocol {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

constexpr std::size_t kReserveAtMost = 64u << 20;

}  // namespace

void FrameDecoder::feed(std::string_view bytes) {
  if (failed_) return;
  std::size_t i = 0;
  if (skipping_) {
    std::size_t n = std::min(skip_remaining_, bytes.size());
    skip_remaining_ -= n;
    i = n;
    if (skip_remaining_ == 0) skipping_ = false;
  }
  buffer_.append(bytes.data() + i, bytes.size() - i);
}

// Bytes just read into the buffer at `from` that belong to a body being skipped are dropped.
void FrameDecoder::skip_filled(std::size_t from) {
  const std::size_t n = std::min(skip_remaining_, buffer_.size() - from);
  buffer_.erase(from, n);
  skip_remaining_ -= n;
  if (skip_remaining_ == 0) skipping_ = false;
}

void FrameDecoder::release_spare() {
  if (mid_frame()) return;
  buffer_.clear();
  pos_ = 0;
  buffer_.shrink_to_fit();
}

void FrameDecoder::compact() {
  if (pos_ > 0 && (pos_ > 65536 || pos_ * 2 > buffer_.size())) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
}

std::optional<std::expected<std::string, FrameIssue>> FrameDecoder::next() {
  auto v = next_view();
  if (!v) return std::nullopt;
  if (!*v) return std::unexpected(std::move(v->error()));
  return std::string(**v);
}

// The header of the frame at pos_: nullopt while it is incomplete.
std::optional<std::expected<FrameDecoder::Header, FrameIssue>> FrameDecoder::parse_header() const {
  std::string_view avail(buffer_.data() + pos_, buffer_.size() - pos_);
  auto end = avail.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (avail.size() > limits_.max_header)
      return std::unexpected(FrameIssue{FrameIssueKind::header_too_long,
                                        "frame header longer than " + std::to_string(limits_.max_header) +
                                            " bytes without a blank line"});
    return std::nullopt;
  }
  if (end > limits_.max_header) return std::unexpected(FrameIssue{FrameIssueKind::header_too_long, "frame header too long"});
  std::string_view header = avail.substr(0, end);
  std::optional<std::size_t> length;
  while (!header.empty()) {
    auto eol = header.find("\r\n");
    std::string_view line = header.substr(0, eol);
    header = eol == std::string_view::npos ? std::string_view{} : header.substr(eol + 2);
    auto colon = line.find(':');
    if (colon == std::string_view::npos)
      return std::unexpected(FrameIssue{FrameIssueKind::malformed_header,
                                        "malformed header line (no ':'): '" + std::string(line.substr(0, 80)) + "'"});
    auto name = trim(line.substr(0, colon));
    auto value = trim(line.substr(colon + 1));
    if (iequals(name, "Content-Length")) {
      std::size_t n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc{} || p != value.data() + value.size() || value.empty())
        return std::unexpected(FrameIssue{FrameIssueKind::malformed_header,
                                          "bad Content-Length value '" + std::string(value.substr(0, 40)) + "'"});
      length = n;
    }
    // Content-Type and unknown headers are accepted and ignored, as LSP clients expect.
  }
  if (!length) return std::unexpected(FrameIssue{FrameIssueKind::missing_length, "frame header has no Content-Length"});
  return Header{pos_ + end + 4, *length};
}

std::optional<std::expected<std::string_view, FrameIssue>> FrameDecoder::next_view() {
  compact();  // here, not after a frame: the view handed out last is no longer needed
  if (failed_ || skipping_) return std::nullopt;
  auto h = parse_header();
  if (!h) return std::nullopt;
  if (!*h) {
    failed_ = true;
    return std::unexpected(std::move(h->error()));
  }
  const std::size_t body_start = (*h)->body_start;
  const std::size_t declared = (*h)->length;
  if (declared > std::max(limits_.max_skip, limits_.max_body)) {
    failed_ = true;
    return std::unexpected(FrameIssue{FrameIssueKind::body_too_large,
                                      "message body of " + std::to_string(declared) + " bytes exceeds the limit of " +
                                          std::to_string(limits_.max_body) + " bytes, and is too large to skip",
                                      true});
  }
  if (declared > limits_.max_body) {
    std::size_t have = buffer_.size() - body_start;
    std::size_t drop = std::min(have, declared);
    pos_ = body_start + drop;
    if (drop < declared) {
      skipping_ = true;
      skip_remaining_ = declared - drop;
    }
    compact();
    return std::unexpected(FrameIssue{FrameIssueKind::body_too_large,
                                      "message body of " + std::to_string(declared) + " bytes exceeds the limit of " +
                                          std::to_string(limits_.max_body) + " bytes",
                                      false});
  }
  const std::size_t length = declared - diverted_;  // what divert took out never enters the buffer
  if (buffer_.size() - body_start < length) {
    // Room for the whole frame at once: an 8 MiB body fed in pipe-sized pieces otherwise grew
    // the buffer by doubling, copying it into fresh pages each time. (Capped: a header alone
    // does not get to claim the whole body limit.)
    buffer_.reserve(body_start + std::min<std::size_t>(length, kReserveAtMost));
    return std::nullopt;
  }
  std::string_view body(buffer_.data() + body_start, length);
  pos_ = body_start + length;
  diverted_ = 0;
  return body;
}

std::optional<FrameDecoder::BodyInProgress> FrameDecoder::body_in_progress() const {
  if (failed_ || skipping_) return std::nullopt;
  auto h = parse_header();
  if (!h || !*h || (*h)->length > limits_.max_body) return std::nullopt;
  const std::size_t start = (*h)->body_start, length = (*h)->length - diverted_;
  const std::size_t have = buffer_.size() - start;
  if (have >= length) return std::nullopt;  // complete: next_view's
  return BodyInProgress{std::string_view(buffer_.data() + start, have), length, diverted_ > 0};
}

std::optional<std::size_t> FrameDecoder::divert(std::size_t head_at, std::size_t data_at, std::size_t n, char placeholder,
                                                char* out) {
  auto h = parse_header();
  if (!h || !*h || diverted_ > 0) return std::nullopt;
  const std::size_t start = (*h)->body_start;
  const std::size_t have = buffer_.size() - start;
  const std::size_t length = (*h)->length;
  if (head_at >= data_at || data_at > have || data_at > length || n > length - data_at) return std::nullopt;
  const std::size_t buffered = std::min(n, have - data_at);
  std::memcpy(out, buffer_.data() + start + data_at, buffered);
  buffer_[start + head_at] = placeholder;
  buffer_.erase(start + head_at + 1, data_at - head_at - 1 + buffered);
  diverted_ = (data_at - head_at - 1) + n;
  return buffered;
}

std::string encode_frame(std::string_view body, std::string_view content_type) {
  std::string out;
  out.reserve(body.size() + 64);
  out += "Content-Length: ";
  out += std::to_string(body.size());
  out += "\r\n";
  if (!content_type.empty()) {
    out += "Content-Type: ";
    out += content_type;
    out += "\r\n";
  }
  out += "\r\n";
  out += body;
  return out;
}

}  // namespace ferry::protocol
