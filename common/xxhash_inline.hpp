// xxHash compiled into each file that hashes (XXH_INLINE_ALL), so neither end links libxxhash: the
// agent is one static binary for every architecture, and the helper needs one library fewer.
#pragma once

#define XXH_INLINE_ALL
#include <xxhash.h>
