// apply_process_defaults on Windows (see process_defaults.hpp): nothing to change.
#include "common/process_defaults.hpp"

namespace ferry::platform {

void apply_process_defaults() {}

}  // namespace ferry::platform
