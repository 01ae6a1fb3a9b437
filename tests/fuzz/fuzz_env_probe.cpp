// Fuzzes what ferry reads from the box's interpreter and the user's VS Code settings: the env
// probe's output (parse_probe_output: noise, a marked JSON line of any shape) must parse or say
// why, never crash, and an accepted report round-trips through to_json; merge_settings_key over
// any settings.json text must either refuse it or give text that still parses with the key set.
//
// Input: a selector byte (bit 0: settings.json, else probe output), then the text.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "helper/env/env_probe.hpp"
#include "helper/ide/settings_key.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  if (data[0] & 1) {
    auto merged = ferry::ide::merge_settings_key(text, "python.defaultInterpreterPath", "${workspaceFolder}/.ferry/venv/bin/python");
    if (merged && merged->changed) {
      auto j = nlohmann::json::parse(merged->text, nullptr, false, true);
      // The key is set unless the input had it (then the text is unchanged).
      if (!j.is_discarded() && j.is_object() && !j.contains("python.defaultInterpreterPath")) __builtin_trap();
    }
    return 0;
  }
  auto info = ferry::env::parse_probe_output(text, "python3");
  if (info) {
    auto back = ferry::env::env_info_from_json(ferry::env::to_json(*info));
    if (!back || back->sys_path.size() != info->sys_path.size() || back->python != info->python) __builtin_trap();
  }
  return 0;
}
