// `ferry serve`: lifecycle and ferry's own methods; project methods are in project_methods.cpp.
#include "helper/server/server.hpp"

#include <chrono>

#include <spdlog/spdlog.h>

#include "ferry/version.hpp"
#include "helper/server/host_session.hpp"
#include "protocol/messages.hpp"

namespace ferry::server {

namespace p = ferry::protocol;
using p::CallContext;
using p::ResponseError;

void bind_project_methods(p::BindingTable& table, const ServerOptions& options);
void bind_debug_methods(p::BindingTable& table, const ServerOptions& options);  // debug_methods.cpp
void bind_sync_methods(p::BindingTable& table, const ServerOptions& options, p::OutgoingRequests& client);  // sync_methods.cpp
void bind_train_methods(p::BindingTable& table, const ServerOptions& options, p::OutgoingRequests& client);  // train_methods.cpp
void bind_run_methods(p::BindingTable& table, const ServerOptions& options, p::OutgoingRequests& ide);  // run_methods.cpp

Server::Server(ServerOptions options) : options_(std::move(options)), client_(std::make_unique<p::OutgoingRequests>()),
      host_(std::make_unique<HostSession>(*client_)) {
  bind_lifecycle();
  bind_project_methods(table_, options_);
  bind_debug_methods(table_, options_);
  bind_host_methods(table_, options_, *host_);
  bind_doctor_methods(table_, options_, *host_);
  bind_tunnel_methods(table_, *host_);
  bind_sync_methods(table_, options_, *client_);
  bind_train_methods(table_, options_, *client_);
  bind_run_methods(table_, options_, *client_);
  if (options_.test_methods) bind_test_methods();
}

Server::~Server() = default;

int Server::run(int in_fd, int out_fd) {
  TransportOptions transport = options_.transport;
  transport.outgoing = client_.get();
  int code = serve_stream(table_, in_fd, out_fd, transport);
  host_->close();  // the agent goes when the IDE does
  return code;
}

void Server::bind_lifecycle() {
  // Handled inside the dispatcher, listed here so capabilities name them.
  table_.reserve_name(p::method::kExit);
  table_.reserve_name(p::method::kCancelRequest);

  table_.request<p::InitializeParams, p::InitializeResult>(
      p::method::kInitialize, [this](const p::InitializeParams& params, CallContext&) {
        if (params.client_info)
          spdlog::info("initialize from {} {}", params.client_info->name, params.client_info->version.value_or(""));
        p::InitializeResult r;
        r.server_info.version = ferry::kVersion;
        r.methods = table_.method_names();
        return std::expected<p::InitializeResult, ResponseError>(std::move(r));
      });
  table_.notification<p::EmptyParams>(p::method::kInitialized,
                                      [](const p::EmptyParams&, CallContext&) { spdlog::debug("client initialized"); });
  table_.request<p::EmptyParams, p::NullResult>(p::method::kShutdown, [](const p::EmptyParams&, CallContext&) {
    spdlog::info("shutdown requested");
    return std::expected<p::NullResult, ResponseError>(p::NullResult{});
  });
  table_.notification<p::SetTraceParams>(p::method::kSetTrace, [](const p::SetTraceParams& params, CallContext&) {
    spdlog::debug("trace set to {}", params.value);
  });
  // A trivial round trip for health checks and the RPC benchmark.
  table_.request<p::PingParams, p::PingResult>(p::method::kPing, [](const p::PingParams& params, CallContext&) {
    return std::expected<p::PingResult, ResponseError>(p::PingResult{params.payload});
  });
}

void Server::bind_test_methods() {
  // Sleeps on a worker in `steps` slices, reporting progress, and stops at once when
  // cancelled: the transcript tests of cancellation and $/progress drive it.
  table_.request<p::TestSleepParams, p::TestSleepResult>(
      p::method::kTestSleep,
      [](const p::TestSleepParams& params, CallContext& ctx) -> std::expected<p::TestSleepResult, ResponseError> {
        auto progress = ctx.progress();
        progress.begin("Sleeping", std::to_string(params.ms) + " ms", 0);
        auto slice = std::chrono::milliseconds(params.ms) / params.steps;
        for (int i = 1; i <= params.steps; ++i) {
          if (ctx.cancellation().wait_for(slice)) return std::unexpected(p::cancelled_error(ctx.method()));
          progress.report("step " + std::to_string(i) + " of " + std::to_string(params.steps),
                          i * 100 / params.steps);
        }
        progress.end("done");
        return p::TestSleepResult{params.ms};
      },
      p::Execution::worker);
}

}  // namespace ferry::server
