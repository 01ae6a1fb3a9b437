// train/start and train/stop's service, also used by the ferry.train command (lsp_commands.cpp).
#pragma once

#include <expected>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "helper/server/server_context.hpp"
#include "helper/train/train_event.hpp"
#include "protocol/binding_table.hpp"

namespace ferry::server {

struct TrainStartParams {
  std::optional<std::string> path;  // the project (ferry.json or its directory)
  std::string config;               // the config file: absolute, or relative to the project root
  bool resume = false;
  bool sync = true;
  std::optional<std::string> trainer;  // ferry-train on the box
};

// Instead of train/metrics and train/exited (a plain LSP client): each event line, every other
// output line, and the end (train/exited's params).
struct TrainObserver {
  std::function<void(const training::TrainEvent& event, std::string_view line)> event;
  std::function<void(std::string_view text)> other;
  std::function<void(const protocol::json& exited)> exited;
};

class TrainService;
std::shared_ptr<TrainService> make_train_service(const ServerContext& ctx);
std::expected<protocol::json, protocol::ResponseError> start_training(TrainService& service, const TrainStartParams& params,
                                                                      protocol::CallContext& ctx, TrainObserver observer = {});
std::expected<protocol::json, protocol::ResponseError> stop_training(TrainService& service, const std::string& run_id);
void bind_train_methods(protocol::BindingTable& table, std::shared_ptr<TrainService> service);

}  // namespace ferry::server
