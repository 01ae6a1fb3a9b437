// Typed project/load result: see messages_project.hpp.
#include "protocol/messages_project.hpp"

namespace ferry::protocol {

json to_json(const ProjectLoadResult& r) { return r.config; }

}  // namespace ferry::protocol
