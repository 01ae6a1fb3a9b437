// host/connect, tunnel/*, doctor/run: the methods about the project's host (host_methods.cpp,
// tunnel_methods.cpp, doctor_methods.cpp).
#pragma once

#include <functional>
#include <memory>

#include <stop_token>

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
class ProjectLink;
// The link a request of `path`'s project works on: the editor's (connecting on first need), or for
// the project socket's commands only one that is up already.
using LinkOf = std::function<std::expected<std::shared_ptr<ProjectLink>, protocol::ResponseError>(
    const std::optional<std::string>& path, protocol::CallContext& call)>;
// env/info, env/sync (env_methods.cpp).
void bind_env_methods(protocol::BindingTable& table, LinkOf link_of);
// Mirrors the box's packages again when its installed distributions differ from the mirror's
// last sync (nothing when they match): once now, then after every run on the link ends (a `pip
// install` run from the editor), until `stop` (env_methods.cpp).
void keep_env_mirror_fresh(ProjectLink& link, std::stop_token stop);
void bind_cost_methods(protocol::BindingTable& table, const ServerContext& ctx);  // cost_methods.cpp
void bind_gpu_methods(protocol::BindingTable& table, const ServerContext& ctx);   // gpu_methods.cpp
// doctor/run's checks (the ferry.doctor command shows them too).
std::expected<protocol::DoctorRunResult, protocol::ResponseError> run_doctor_checks(const ServerContext& ctx,
                                                                                   const protocol::DoctorRunParams& params,
                                                                                   protocol::CallContext& call);

}  // namespace ferry::server
