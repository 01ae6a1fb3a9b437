// See train_launch.hpp.
#include "helper/train/train_launch.hpp"

#include <unistd.h>

#include "common/executables.hpp"
#include "common/path_within.hpp"

namespace ferry::training {
namespace fs = std::filesystem;

std::optional<std::string> join_inside(const std::string& base, const std::string& path) {
  if (fs::path(path).is_absolute()) return std::nullopt;
  fs::path joined = (fs::path(base.empty() ? "." : base) / path).lexically_normal();
  // "a/b/" normalises with a trailing separator: drop it (the last element is then empty).
  if (!joined.empty() && joined.filename().empty()) joined = joined.parent_path();
  if (joined.empty()) return std::string(".");
  if (joined.is_absolute() || *joined.begin() == "..") return std::nullopt;
  return joined.string();
}

std::expected<TrainLaunch, std::string> make_train_launch(const fs::path& config, const fs::path& mapping_root,
                                                          const std::string& binary, bool resume) {
  std::error_code ec;
  const fs::path abs_config = fs::weakly_canonical(fs::absolute(config, ec), ec);
  const fs::path abs_root = fs::weakly_canonical(fs::absolute(mapping_root, ec), ec);
  const fs::path rel = ferry::posix::relative_to(abs_config, abs_root);
  if (rel.empty() || rel.string().starts_with("..") || rel.is_absolute())
    return std::unexpected(config.string() + " is not inside the mapped folder " + abs_root.string() +
                           " (only synced files reach the box)");
  TrainLaunch launch;
  launch.cwd = rel.parent_path().empty() ? "." : rel.parent_path().string();
  launch.argv = {binary, rel.filename().string()};
  if (resume) launch.argv.push_back("--resume");
  return launch;
}

std::expected<TrainOutputs, std::string> train_outputs(const nlohmann::json& config, const std::string& run_cwd,
                                                       const std::optional<std::string>& checkpoint) {
  if (!config.is_object()) return std::unexpected("the config is not a JSON object");
  std::string output_dir = ".";
  if (auto it = config.find("output_dir"); it != config.end()) {
    if (!it->is_string() || it->get<std::string>().empty()) return std::unexpected("output_dir is not a non-empty string");
    output_dir = it->get<std::string>();
  }
  TrainOutputs out;
  auto dir = join_inside(run_cwd, output_dir);
  if (!dir) {
    out.skipped.push_back(output_dir);
  } else {
    out.output_dir = *dir;
    for (const char* name : {"plot.svg", "metrics.csv", "events.jsonl"}) out.files.push_back(*join_inside(*dir, name));
  }
  if (checkpoint) {
    if (auto ck = join_inside(run_cwd, *checkpoint)) {
      out.files.push_back(*ck);
    } else {
      out.skipped.push_back(*checkpoint);
    }
  }
  return out;
}

std::expected<fs::path, std::string> find_local_train_binary() {
  if (const char* env = std::getenv("FERRY_TRAIN"); env && *env) {
    if (!platform::is_executable_file(env)) return std::unexpected(std::string("$FERRY_TRAIN='") + env + "' is not an executable file");
    return fs::path(env);
  }
  const auto exe = platform::executable_path();
  if (!exe) return std::unexpected(exe.error());
  const fs::path self = *exe;
  for (const fs::path& p : {self.parent_path() / "ferry-train", self.parent_path().parent_path() / "remote-runtime" / "train" / "ferry-train"}) {
    if (platform::is_executable_file(p)) return p;
  }
  return std::unexpected("no ferry-train next to " + self.string() +
                         ": build it (cmake -DFERRY_WITH_TORCH=ON, target ferry-train) or set $FERRY_TRAIN to its path");
}

}  // namespace ferry::training
