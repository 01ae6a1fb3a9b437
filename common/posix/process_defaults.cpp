// apply_process_defaults on Linux (see process_defaults.hpp).
#include "common/process_defaults.hpp"

#include <malloc.h>

#include <csignal>

namespace ferry::platform {

void apply_process_defaults() {
  std::signal(SIGPIPE, SIG_IGN);
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);  // keep up to 64 MiB of freed heap for the next request
  ::mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

}  // namespace ferry::platform
