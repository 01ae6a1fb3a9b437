// host/connect, tunnel/*, doctor/run: the methods about the project's host (host_methods.cpp,
// tunnel_methods.cpp, doctor_methods.cpp).
#pragma once

#include "helper/server/server_context.hpp"
#include "protocol/binding_table.hpp"
#include "protocol/messages.hpp"

namespace ferry::server {

std::expected<protocol::HostConnectResult, protocol::ResponseError> connect_host(const ServerContext& ctx,
                                                                                 const std::optional<std::string>& path,
                                                                                 protocol::CallContext& call);
void bind_host_methods(protocol::BindingTable& table, const ServerContext& ctx);
void bind_tunnel_methods(protocol::BindingTable& table, const ServerContext& ctx);
void bind_doctor_methods(protocol::BindingTable& table, const ServerContext& ctx);
void bind_cost_methods(protocol::BindingTable& table, const ServerContext& ctx);  // cost_methods.cpp
void bind_gpu_methods(protocol::BindingTable& table, const ServerContext& ctx);   // gpu_methods.cpp
// doctor/run's checks (the ferry.doctor command shows them too).
std::expected<protocol::DoctorRunResult, protocol::ResponseError> run_doctor_checks(const ServerContext& ctx,
                                                                                   const protocol::DoctorRunParams& params,
                                                                                   protocol::CallContext& call);

}  // namespace ferry::server
