// The agent's side of a pull with deltas (sync/readDelta): the helper sends a signature of its
// local copy, the agent answers with a delta that turns that copy into the remote file. The
// mirror of a push's two levels: a coarse pass first (1 MiB blocks) that reports the helper's
// ranges no coarse block matched, then a refinement against fine signatures of just those.
#pragma once

#include <cstdint>
#include <expected>
#include <filesystem>
#include <vector>

#include "protocol/delta/delta.hpp"
#include "remote-runtime/agent/sync/file_writer.hpp"

namespace ferry::agent::sync {

struct ReadDeltaRequest {
  Bytes signature;           // the helper's copy: whole file, or the coarse level
  std::vector<Bytes> fine;   // second level: signatures of the ranges the coarse pass left
  bool ranges_only = false;  // first of two levels: answer the unmatched ranges, no delta
  std::uint64_t max_delta = 128u << 20;  // a larger delta is not sent (too_big): go whole
  std::size_t max_ranges = 4096;
  // The file is read whole into memory: a larger one is answered too_big (the helper then reads
  // it in chunks), so a huge checkpoint cannot exhaust the box's memory.
  std::uint64_t max_file = 2ull << 30;
};

struct ReadDeltaResult {
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;
  std::uint32_t mode = 0;
  Hash128 hash{};
  std::vector<std::uint8_t> delta;  // empty when `ranges` answers or when too_big
  ferry::delta::DeltaStats stats;
  // Set only when ranges_only asked and refining is worth it: the helper signs these finely.
  std::optional<std::vector<ferry::delta::ByteRange>> ranges;
  bool too_big = false;
};

// `file` is already resolved inside the root (its final component is opened O_NOFOLLOW). The
// file is read whole: a delta needs all of it at once. A file that changes while read is
// not_found/io with "changed while being read".
std::expected<ReadDeltaResult, WriteError> read_delta(const std::filesystem::path& file, const ReadDeltaRequest& request);

}  // namespace ferry::agent::sync
