// ErrorKind's names: see error.hpp.
#include "protocol/error.hpp"

namespace ferry {

std::string_view to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::invalid_input: return "invalid_input";
    case ErrorKind::project_not_found: return "project_not_found";
    case ErrorKind::invalid_project: return "invalid_project";
    case ErrorKind::agent_lost: return "agent_lost";
    case ErrorKind::version_mismatch: return "version_mismatch";
    case ErrorKind::too_large: return "too_large";
    case ErrorKind::io: return "io";
    case ErrorKind::debugpy_missing: return "debugpy_missing";
    case ErrorKind::cancelled: return "cancelled";
    case ErrorKind::internal: break;
  }
  return "internal";
}

}  // namespace ferry
