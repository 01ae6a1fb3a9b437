// Diagnostics for the files ferry's language server checks: ferry.json and training configs,
// against their JSON Schemas (embedded in the binary) and ferry's own validators and rules, with
// exact ranges. Pure: text in, diagnostics out. The one thing read from disk is the ssh config,
// for ferry.json's host (ProjectFileContext says whose, or turns it off).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string_view>
#include <vector>

#include "helper/diagnostics/diagnostic.hpp"
#include "helper/ssh/ssh_config.hpp"

namespace ferry::diagnostics {

// At most this many per file, the first by position: a broken 1 MB file must not flood the editor.
inline constexpr std::size_t kMaxDiagnostics = 100;

struct ProjectFileContext {
  ssh::LocalContext ssh_local = ssh::current_local_context();  // ~/.ssh/config and "~" in sshConfig
  bool check_ssh_host = true;  // false: read no file at all (no "ferry.unknownHost")
};

// `file`: the ferry.json path (its folder is the project root mappings are relative to).
// Errors: what makes ferry refuse the file (codes "json", "schema", "ferry.config",
// "ferry.mappingOutsideProject", "ferry.mappingPath"). Warnings: what it accepts but will not
// work as meant ("json.duplicateKey", "ferry.unknownHost", "ferry.sshConfig",
// "ferry.protectShadowsMapping"). A file ferry accepts and nothing warns about: empty.
std::vector<Diagnostic> diagnose_project_file(std::string_view text, const std::filesystem::path& file,
                                              const ProjectFileContext& context = {});

// A ferry-train config: "json", "schema", "ferry.trainConfig" (the validator's rules the schema
// cannot express, e.g. heads must divide d_model), "json.duplicateKey".
std::vector<Diagnostic> diagnose_train_config(std::string_view text);

// A JSON object whose top level has "model" and one of "data", "optimizer", "max_steps",
// "epochs", or whose "$schema" names train-config.schema.json. Decided from the keys before
// the first syntax error, so a config being typed still counts.
bool looks_like_train_config(std::string_view text);

}  // namespace ferry::diagnostics
