// A signature of a big range built by several threads at once, each signing a block-aligned share
// of it read through the caller's function (the codec itself does no I/O). The bytes are exactly
// those a SignatureBuilder fed in order would append: block entries do not depend on each other.
// Why: signing 1 GiB (a weak and a strong hash per block) is the longest step of a big-file
// push or pull, and the side that signs has nothing else to do meanwhile.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <expected>
#include <functional>
#include <vector>

#include "protocol/delta/signature.hpp"

namespace ferry::delta {

// Reads up to `n` bytes at `offset` into `buf`: the count (fewer only at the end of the file) or
// -1 with errno set. Called from several threads at once.
using ReadAt = std::function<ssize_t(std::uint64_t offset, std::uint8_t* buf, std::size_t n)>;

// Appends the signature of [base_offset, base_offset + range_length) of a base of `file_size`
// bytes to `out`. Errors: the parameters (as SignatureBuilder::create), a read that failed
// (sink_failed, with errno's text), or a range that ended early (truncated: the file shrank).
std::expected<void, DeltaError> sign_in_parallel(const ReadAt& read_at, SignatureParams params, std::uint64_t base_offset,
                                                 std::uint64_t range_length, std::uint64_t file_size, unsigned threads,
                                                 std::vector<std::uint8_t>& out);

// The same over bytes already in memory (a mapped file): `range` is base[base_offset, +size).
std::expected<void, DeltaError> sign_in_parallel(Bytes range, SignatureParams params, std::uint64_t base_offset,
                                                 std::uint64_t file_size, unsigned threads, std::vector<std::uint8_t>& out);

}  // namespace ferry::delta
