// Output records as the agent streams them (run/output, run/read) and the bookkeeping that makes
// a resumed stream exact: each record is delivered once, in log order, whatever mix of
// re-attaches, reconnects and repeated notifications brought it.
#pragma once

#include <cstdint>
#include <expected>
#include <string>
#include <vector>

#include "protocol/jsonrpc.hpp"

namespace ferry::run {

using protocol::json;

// output.log's record header: u8 stream + u32 length. Offsets are byte offsets into the log, so
// the record after one at `offset` starts at offset + kRecordHeaderBytes + size.
inline constexpr std::uint64_t kRecordHeaderBytes = 5;

enum class Stream { stdout_stream = 1, stderr_stream = 2 };

struct OutputRecord {
  std::string id;
  std::uint64_t offset = 0;
  Stream stream = Stream::stdout_stream;
  std::string data;  // raw bytes
  std::uint64_t next() const { return offset + kRecordHeaderBytes + data.size(); }
};

// run/output params, or one entry of run/read's records (id then comes from the caller).
std::expected<OutputRecord, std::string> parse_output_record(const json& params, const std::string& id = {});

// run/read's result.
struct ReadResult {
  std::vector<OutputRecord> records;
  std::uint64_t next = 0;
  std::string state;  // "running", "exited", "lost"
};
std::expected<ReadResult, std::string> parse_read_result(const json& result, const std::string& id);

class OutputCursor {
 public:
  enum class Verdict {
    deliver,    // the next record: pass it on (the cursor moved past it)
    duplicate,  // already delivered: drop it
    gap,        // starts after the next expected offset: something is missing, re-attach at next()
  };
  explicit OutputCursor(std::uint64_t start = 0) : next_(start) {}
  Verdict accept(const OutputRecord& record);
  std::uint64_t next() const { return next_; }
  std::uint64_t delivered_bytes() const { return delivered_; }

 private:
  std::uint64_t next_;
  std::uint64_t delivered_ = 0;  // payload bytes passed on
};

}  // namespace ferry::run
