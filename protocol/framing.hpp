// LSP base-protocol framing ("Content-Length: N\r\n\r\n" + body), shared by both wires.
// The decoder is incremental and never trusts the peer: a bad header or an oversize body is
// reported as a FrameIssue, and the decoder resynchronises (skips the announced body) or
// says the stream is unrecoverable. A body is skipped only when a real peer could send it
// (max_skip): skipping a declared 2^40 bytes would read every later frame as that body, and a
// server that hears nothing more but stays alive is worse for a client than one that exits.
#pragma once

#include <algorithm>
#include <cstddef>
#include <expected>
#include <optional>
#include <string>
#include <string_view>

namespace ferry::protocol {

inline constexpr std::size_t kMaxJsonBody = 64u << 20;   // IDE wire
inline constexpr std::size_t kMaxHeaderBytes = 8u << 10;
// Past this a declared body is not skipped but ends the stream: no LSP client builds a message of
// a GiB (a V8 string holds at most 512 MiB), so such a Content-Length is a broken or hostile peer.
inline constexpr std::size_t kMaxSkippedBody = 1u << 30;

struct FrameLimits {
  std::size_t max_body = kMaxJsonBody;
  std::size_t max_header = kMaxHeaderBytes;
  std::size_t max_skip = kMaxSkippedBody;  // bodies over max_body up to this are skipped (never below max_body)
};

enum class FrameIssueKind {
  header_too_long,   // no blank line within max_header bytes: fatal
  malformed_header,  // a header line without ':' or a bad Content-Length: fatal
  missing_length,    // header block without Content-Length: fatal
  body_too_large,    // Content-Length over the cap: body skipped, stream goes on; over max_skip: fatal
};

struct FrameIssue {
  FrameIssueKind kind;
  std::string message;        // what was wrong, for logs and error replies
  bool fatal = true;          // true: the stream cannot be resynchronised; close it
};

class FrameDecoder {
 public:
  explicit FrameDecoder(FrameLimits limits = {}) : limits_(limits) {}

  void feed(std::string_view bytes);
  // Reads straight into the buffer (no copy through a caller's buffer): calls
  // `read(char* into, std::size_t room)` once with room for up to `max` bytes; it returns how
  // many bytes it wrote there (0: none). Returns that count.
  template <class Read>
  std::size_t fill(std::size_t max, Read&& read);

  // The next complete body, an issue, or nullopt when more bytes are needed.
  std::optional<std::expected<std::string, FrameIssue>> next();
  // The same, the body as a view into the buffer: valid until the next call to any member.
  // Spares a reader of big frames one copy of each.
  std::optional<std::expected<std::string_view, FrameIssue>> next_view();

  // The frame being read, once its header is in and before its body is: the body so far and
  // its length (less what divert took out).
  struct BodyInProgress {
    std::string_view so_far;
    std::size_t length;
    bool diverted;  // divert already took its bytes out
  };
  std::optional<BodyInProgress> body_in_progress() const;
  // Takes `n` bytes at body offset `data_at` of the frame being read out of it, for a reader
  // that wants them in a buffer of its own (a pulled chunk, read from the stream straight into
  // the vector the message will hold). The part already buffered is copied to `out` (the count
  // is returned); the caller reads the rest from the stream into `out` after it, before the next
  // fill. The bytes from `head_at` up to `data_at` (the string's head) become `placeholder`, and
  // the body comes out of next_view that much shorter. Once per frame; nullopt (nothing taken)
  // when the offsets do not fit the frame.
  std::optional<std::size_t> divert(std::size_t head_at, std::size_t data_at, std::size_t n, char placeholder, char* out);

  // True while part of a frame is buffered or being skipped: at EOF that means the peer
  // closed mid-frame.
  bool mid_frame() const { return skipping_ || buffer_.size() > pos_; }
  // Gives back the buffer's spare capacity (megabytes after a big frame) when no frame is
  // partly read; for a reader that goes idle.
  void release_spare();
  bool failed() const { return failed_; }

 private:
  FrameLimits limits_;
  std::string buffer_;
  std::size_t pos_ = 0;
  std::size_t skip_remaining_ = 0;
  bool skipping_ = false;
  bool failed_ = false;
  std::size_t diverted_ = 0;  // bytes divert took out of the frame at pos_
  struct Header {
    std::size_t body_start, length;
  };
  std::optional<std::expected<Header, FrameIssue>> parse_header() const;
  void compact();
  void skip_filled(std::size_t from);
};

template <class Read>
std::size_t FrameDecoder::fill(std::size_t max, Read&& read) {
  if (failed_) return 0;
  compact();
  const std::size_t old = buffer_.size();
  // Within the room a big frame's body reserved: growing past it would copy the whole body.
  if (const std::size_t room = buffer_.capacity() - old; room >= (16u << 10)) max = std::min(max, room);
  std::size_t got = 0;
  // resize_and_overwrite: the room is not zeroed first (megabytes per big frame).
  buffer_.resize_and_overwrite(old + max, [&](char* p, std::size_t) {
    got = read(p + old, max);
    return old + got;
  });
  if (skipping_) skip_filled(old);
  return got;
}

// Frames a body. content_type is written only when non-empty.
std::string encode_frame(std::string_view body, std::string_view content_type = {});

}  // namespace ferry::protocol
