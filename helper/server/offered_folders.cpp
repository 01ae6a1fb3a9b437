// OfferedFolders (offered_folders.hpp): a JSON list of absolute paths, rewritten atomically.
#include "helper/server/offered_folders.hpp"

#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "common/private_files.hpp"
#include "common/user_dirs.hpp"
#include "helper/sync/atomic_file.hpp"

namespace ferry::server {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

json read_list(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return json::array();
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json doc = json::parse(text, nullptr, false);
  return doc.is_object() && doc["folders"].is_array() ? doc["folders"] : json::array();
}

std::string key_of(const fs::path& folder) {
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(folder, ec);
  return (ec ? folder : real).string();
}

}  // namespace

fs::path OfferedFolders::default_file() {
  auto config = platform::config_home();
  return config ? *config / "ferry" / "offered-folders.json" : fs::path();
}

bool OfferedFolders::offered(const fs::path& folder) const {
  if (file_.empty()) return false;
  const std::string key = key_of(folder);
  for (const auto& f : read_list(file_))
    if (f.is_string() && f.get<std::string>() == key) return true;
  return false;
}

bool OfferedFolders::remember(const fs::path& folder) {
  if (file_.empty()) return false;
  if (offered(folder)) return true;
  json list = read_list(file_);
  list.push_back(key_of(folder));
  if (posix::make_private_dirs(file_.parent_path())) return false;
  return sync::write_file_atomically(file_, json{{"folders", list}}.dump(2) + "\n", 0600).has_value();
}

}  // namespace ferry::server
