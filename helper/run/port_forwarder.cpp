// PortForwarder (port_forwarder.hpp).
#include "helper/run/port_forwarder.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "helper/remote/forward_spec.hpp"

namespace ferry::run {

std::string describe_port_event(const PortEvent& e, const std::optional<PortForward>& f, const std::string& error) {
  const std::string port = "port " + std::to_string(e.port) + " on the box";
  if (!e.open) return "ferry: " + port + " closed; its tunnel is gone";
  if (!f) return "ferry: " + port + " is listening, not forwarded: " + error;
  return "ferry: " + port + " \u2192 " + f->url;
}

namespace {

// Where the box's side of the tunnel connects: a wildcard bind is reached on loopback.
std::string target_of(const std::string& address) {
  if (address == "0.0.0.0" || address.empty()) return "127.0.0.1";
  if (address == "::") return "::1";
  return address;
}

}  // namespace

PortForwarder::PortForwarder(remote::Endpoint& endpoint, deploy::AutoForwardPorts policy, bool same_machine, Announce announce)
    : endpoint_(endpoint), policy_(std::move(policy)), same_machine_(same_machine), announce_(std::move(announce)) {
  if (policy_.enabled) thread_ = std::thread([this] { loop(); });
}

PortForwarder::~PortForwarder() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (const auto& [key, f] : open_)
    if (f.forward_id) (void)endpoint_.close_forward(f.forward_id);
}

void PortForwarder::on_port(PortEvent event) {
  if (!policy_.enabled) return;
  if (!policy_.ports.empty() && std::find(policy_.ports.begin(), policy_.ports.end(), event.port) == policy_.ports.end()) return;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(event));
  }
  cv_.notify_all();
}

void PortForwarder::loop() {
  for (;;) {
    PortEvent event;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      event = std::move(queue_.front());
      queue_.pop_front();
    }
    handle(event);
  }
}

void PortForwarder::handle(const PortEvent& e) {
  const auto key = std::make_pair(e.run_id, e.port);
  if (!e.open) {
    auto it = open_.find(key);
    if (it == open_.end()) return;
    if (it->second.forward_id) (void)endpoint_.close_forward(it->second.forward_id);
    open_.erase(it);
    announce_(e, std::nullopt, "");
    return;
  }
  if (open_.contains(key)) return;
  if (same_machine_) {
    open_[key] = PortForward{e.port, e.port, "http://127.0.0.1:" + std::to_string(e.port), 0};
    announce_(e, open_[key], "");
    return;
  }
  remote::ForwardSpec spec;
  spec.name = "port " + std::to_string(e.port);
  spec.remote_host = target_of(e.address);
  spec.remote_port = e.port;
  spec.local_port = e.port;  // the same number here when it is free: links in the run's output work as printed
  auto opened = endpoint_.open_forward(spec);
  if (!opened) {
    spec.local_port = 0;
    opened = endpoint_.open_forward(spec);
  }
  if (!opened) {
    spdlog::warn("port {} of run {}: {}", e.port, e.run_id, opened.error().message);
    announce_(e, std::nullopt, opened.error().message);
    return;
  }
  PortForward f{e.port, opened->bound_port, "http://127.0.0.1:" + std::to_string(opened->bound_port), opened->id};
  open_[key] = f;
  announce_(e, f, "");
}

}  // namespace ferry::run
