// The folders ferry serve has offered a ferry.json to, kept in the user's config folder
// (ferry/offered-folders.json, owner-only), never in the folder itself. LSP4IJ keeps its language
// servers per application, so `ferry serve` starts in every project with a .py file: the offer
// must come once per folder, whatever the answer, and then never again (`ferry init` makes one
// any time).
#pragma once

#include <filesystem>

namespace ferry::server {

class OfferedFolders {
 public:
  // ferry/offered-folders.json under the user's config root; empty when there is none.
  static std::filesystem::path default_file();
  explicit OfferedFolders(std::filesystem::path file = default_file()) : file_(std::move(file)) {}

  bool offered(const std::filesystem::path& folder) const;
  // Records it, before the question is asked: an editor closed mid-question has been asked too.
  // False when nothing could be recorded (then the offer is not made at all: asking on every
  // open is what this prevents).
  bool remember(const std::filesystem::path& folder);

 private:
  std::filesystem::path file_;
};

}  // namespace ferry::server
