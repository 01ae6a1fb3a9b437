// launch_json: merge into .vscode/launch.json without losing the user's other configurations or comments.
#include "helper/debug/launch_json.hpp"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/dir_at.hpp"
#include "common/full_io.hpp"
#include "common/open_file.hpp"
#include "common/temp_name.hpp"
#include "common/unique_fd.hpp"
#include "helper/debug/jsonc_merge.hpp"

namespace ferry::debug {

namespace fs = std::filesystem;
using nlohmann::json;

std::expected<MergedLaunchJson, std::string> merge_launch_configuration(std::string_view existing,
                                                                       const json& configuration) {
  if (!configuration.is_object() || !configuration.contains("name") || !configuration["name"].is_string())
    return std::unexpected("the configuration to merge has no name");
  JsoncMergeRequest request{"configurations", "name", {{"version", "0.2.0"}}, {nlohmann::ordered_json(configuration)}};
  auto merged = merge_named_entries(existing, request);
  if (!merged) return std::unexpected("launch.json: " + merged.error());
  // An entry already exactly as wanted counts as replaced: the caller says "updated".
  return MergedLaunchJson{std::move(merged->text), merged->added.empty()};
}

std::expected<LaunchJsonWrite, std::string> write_launch_configuration(const fs::path& project_root,
                                                                      const json& configuration) {
  LaunchJsonWrite result;
  const fs::path dir = project_root / ".vscode";
  result.path = dir / "launch.json";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return std::unexpected("cannot create " + dir.string() + ": " + ec.message());

  std::string existing;
  if (fs::exists(result.path, ec)) {
    std::ifstream in(result.path, std::ios::binary);
    if (!in) return std::unexpected("cannot read " + result.path.string());
    std::ostringstream buffer;
    buffer << in.rdbuf();
    existing = buffer.str();
  }
  auto merged = merge_launch_configuration(existing, configuration);
  if (!merged) return std::unexpected(result.path.string() + ": " + merged.error());
  result.replaced = merged->replaced;

  // Temp file beside the target, fsync, rename: the editor never sees a torn launch.json.
  const fs::path temp = dir / ferry::posix::temp_name("launch.json");
  ferry::posix::UniqueFd fd(ferry::posix::open_file(temp, O_WRONLY | O_CREAT | O_EXCL, 0644));
  if (!fd) return std::unexpected("cannot create " + temp.string() + ": " + std::strerror(errno));
  if (ferry::posix::write_full(fd.get(), merged->text.data(), merged->text.size()) < 0) {
    const std::string why = std::strerror(errno);
    fd.reset();
    fs::remove(temp, ec);
    return std::unexpected("cannot write " + temp.string() + ": " + why);
  }
  if (ferry::posix::sync_fd(fd.get()) != 0 || fd.close() != 0) {
    const std::string why = std::strerror(errno);
    fs::remove(temp, ec);
    return std::unexpected("cannot flush " + temp.string() + ": " + why);
  }
  fs::rename(temp, result.path, ec);
  if (ec) {
    fs::remove(temp, ec);
    return std::unexpected("cannot replace " + result.path.string() + ": " + ec.message());
  }
  return result;
}

}  // namespace ferry::debug
