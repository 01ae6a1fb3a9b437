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
#include "protocol/messages_train.hpp"

namespace ferry::server {

using protocol::TrainStartParams;

// Instead of train/metrics and train/exited (a plain LSP client): each event line, every other
// output line, and the end (train/exited's params).
struct TrainObserver {
  std::function<void(const training::TrainEvent& event, std::string_view line)> event;
  std::function<void(std::string_view text)> other;
  std::function<void(const protocol::json& exited)> exited;
};

class TrainService;
std::shared_ptr<TrainService> make_train_service(const ServerContext& ctx);
std::expected<protocol::TrainStartResult, protocol::ResponseError> start_training(TrainService& service,
                                                                                  const TrainStartParams& params,
                                                                                  protocol::CallContext& ctx,
                                                                                  TrainObserver observer = {});
std::expected<protocol::EmptyResult, protocol::ResponseError> stop_training(TrainService& service, const std::string& run_id);
void bind_train_methods(protocol::BindingTable& table, std::shared_ptr<TrainService> service);

}  // namespace ferry::server
