// LiveServer (live_server.hpp).
#include "helper/cli/live_server.hpp"

#include <cstdlib>

#include <spdlog/spdlog.h>

#include "common/build_info.hpp"

namespace ferry::cli {

using nlohmann::json;

namespace {
bool flag_off = false;  // set while parsing, before any command runs
}  // namespace

void turn_daemons_off() { flag_off = true; }

bool daemons_off() {
  if (flag_off) return true;
  const char* off = std::getenv("FERRY_NO_DAEMON");
  return off && *off && std::string(off) != "0";
}

std::unique_ptr<LiveServer> LiveServer::find(const deploy::ProjectConfig& project) {
  if (daemons_off()) return nullptr;
  auto client = server::SocketClient::connect(project.root);
  if (!client) return nullptr;
  std::unique_ptr<LiveServer> live(new LiveServer(std::move(client)));
  auto hello = live->call("ferry/hello", json{{"path", project.root.string()}});
  if (!hello) return nullptr;
  if (hello->value("version", "") != ferry::version_text()) {
    spdlog::info("the live ferry (pid {}) is {}, this ferry {}: not riding it", hello->value("pid", 0LL),
                 hello->value("version", ""), ferry::version_text());
    return nullptr;
  }
  if (!hello->value("linked", false)) return nullptr;  // its connect would ask the editor, not this terminal
  live->endpoint_ = hello->value("endpoint", "");
  live->pid_ = hello->value("pid", 0LL);
  live->hello_ = *hello;
  spdlog::info("riding the live ferry (pid {}) of {}", live->pid_, project.root.string());
  return live;
}

}  // namespace ferry::cli
