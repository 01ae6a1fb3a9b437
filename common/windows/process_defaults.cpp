// apply_process_defaults on Windows (see process_defaults.hpp): the standard streams in binary
// mode, so a remote program's output reaches ours byte for byte (the C runtime's text mode would
// make every "\n" a "\r\n") and ferry's own lines end as they do on Linux.
#include "common/process_defaults.hpp"

#include "common/terminal.hpp"

namespace ferry::platform {

void apply_process_defaults() {
  for (int fd : {0, 1, 2}) set_binary_mode(fd);
}

}  // namespace ferry::platform
