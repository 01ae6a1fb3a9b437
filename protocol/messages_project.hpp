// Typed result of project/load (its params, ProjectLoadParams, are in messages.hpp).
#pragma once

#include <nlohmann/json.hpp>

namespace ferry::protocol {

using json = nlohmann::json;

// The validated ferry.json with its defaults filled in: helper/deploy's ProjectConfig document
// (deploy::to_json), whose shape protocol/spec/ferry.schema.json and the deploy layer own, so
// it is json here.
struct ProjectLoadResult {
  json config = json::object();
};
json to_json(const ProjectLoadResult& r);

}  // namespace ferry::protocol
