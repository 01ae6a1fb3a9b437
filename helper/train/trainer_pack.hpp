// The trainer's sources as ferry carries them to a box: a .tar.gz packed at build time
// (pack_trainer_sources.cmake) and linked into the helper, and its sha256, the box's cache key.
#pragma once

#include <expected>
#include <string>
#include <string_view>

namespace ferry::training {

struct TrainerPack {
  std::string bytes;   // the .tar.gz
  std::string sha256;  // 64 lowercase hex digits of `bytes`
  std::string origin;  // "built in" or the file it came from
  std::string key() const { return sha256.substr(0, 16); }  // names the box's cache entry
};

// The built-in pack, or the file $FERRY_TRAIN_PACK names (a pack of other sources, e.g. a
// trainer being worked on).
std::expected<TrainerPack, std::string> trainer_pack();

}  // namespace ferry::training
