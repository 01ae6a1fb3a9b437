// VS Code's JSON-with-comments files (.vscode/launch.json, tasks.json): named entries merged into
// a top-level array by editing the text, so the user's comments, entries, order and layout outside
// the entries ferry writes stay exactly as they were.
#pragma once

#include <expected>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ferry::debug {

struct JsoncMergeRequest {
  std::string array_key;                          // "configurations" (launch.json), "tasks" (tasks.json)
  std::string name_key;                           // "name", "label": what identifies an entry
  nlohmann::ordered_json skeleton;                // top-level keys a file must have, e.g. {"version": "0.2.0"}
  std::vector<nlohmann::ordered_json> entries;    // objects, each with a string name_key
};

struct JsoncMerge {
  std::string text;                          // the new file
  std::vector<std::string> added;            // entry names appended
  std::vector<std::string> replaced;         // names whose old entry differed and was replaced in place
  std::vector<std::string> unchanged;        // names whose entry was already exactly this (text untouched)
  std::vector<std::string> existing_names;   // every name in the array before the merge
};

// `existing` is the file's text ("" or blank for none). It may hold // and /* */ comments and
// trailing commas, as VS Code allows. An entry whose name matches replaces the first one of that
// name where it stands; the others are appended at the end of the array. Skeleton keys the file
// lacks are added. Anything that is not a JSON object (or whose array_key is not an array) is an
// error: a file ferry cannot read is never replaced.
std::expected<JsoncMerge, std::string> merge_named_entries(std::string_view existing, const JsoncMergeRequest& request);

}  // namespace ferry::debug
