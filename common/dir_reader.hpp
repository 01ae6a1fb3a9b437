// The no-follow directory walk both ends share: a directory is opened only when its last component
// is not a symlink (on Windows: not a reparse point that stands for a link, such as a junction),
// and its entries are statted without following, so a link is always seen as itself and never
// walked into. Names are handed out as UTF-8 on every platform. What to do with each entry stays
// with the caller (the helper's scanner, the agent's tree listing). The calls relative
// to a directory descriptor are in common/dir_at.hpp.
#pragma once

#include <expected>
#include <filesystem>
#include <memory>
#include <optional>

#include "common/file_times.hpp"

namespace ferry::posix {

struct DirEntry {
  const char* name;  // UTF-8; valid until the next call to next()
  FileStat st;       // not following a link
  int stat_error;    // 0, or the errno of the stat (st is then zero); EILSEQ: a name not valid UTF-16
};

// One open directory's entries other than "." and "..".
class DirReader {
 public:
  // Opens `dir` without following a link in its last component: the errno on failure (ENOTDIR or
  // ELOOP for a link, ENOTDIR for a file, ENOENT).
  static std::expected<DirReader, int> open(const std::filesystem::path& dir);

  DirReader(DirReader&& o) noexcept;
  DirReader& operator=(DirReader&& o) noexcept;
  DirReader(const DirReader&) = delete;
  DirReader& operator=(const DirReader&) = delete;
  ~DirReader();

  // The next entry, or nothing at the end (or on a read error).
  std::optional<DirEntry> next();

  // The platform's open directory (common/posix, common/windows): what the platform's own
  // functions build a reader from and look into.
  struct State;
  explicit DirReader(std::unique_ptr<State> state) noexcept;
  State& state() const { return *state_; }

 private:
  std::unique_ptr<State> state_;
};

}  // namespace ferry::posix
