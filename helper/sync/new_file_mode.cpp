// See new_file_mode.hpp.
#include "helper/sync/new_file_mode.hpp"

#include <fcntl.h>

#include "common/full_io.hpp"
#include "common/open_file.hpp"
#include "common/unique_fd.hpp"

namespace ferry::sync {

std::uint32_t new_file_mode(const std::filesystem::path& file) {
  posix::UniqueFd fd(posix::open_file_nofollow(file, O_RDONLY));
  char head[2] = {};
  if (!fd || posix::read_full(fd.get(), head, sizeof head) != 2) return 0644;
  return head[0] == '#' && head[1] == '!' ? 0755 : 0644;
}

}  // namespace ferry::sync
