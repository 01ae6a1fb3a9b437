// ferry.json's tunnels on the editor's link, and a Slurm project's following its allocation
// (project_tunnels.hpp).
#include "helper/server/project_tunnels.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>

#include <spdlog/spdlog.h>

#include "helper/remote/forward_spec.hpp"
#include "helper/remote/job_endpoint.hpp"
#include "helper/server/allocation_status.hpp"
#include "helper/server/project_session.hpp"

namespace ferry::server {

std::vector<int> open_project_tunnels(remote::Endpoint& endpoint, const deploy::ProjectConfig& config) {
  std::vector<int> ids;
  for (const auto& t : config.tunnels) {
    auto opened = endpoint.open_forward(remote::forward_spec_from(t));
    if (!opened) {
      spdlog::warn("tunnel {} from ferry.json not opened: {}", t.name, opened.error().message);
      continue;
    }
    spdlog::info("tunnel {}: {}", t.name, remote::describe(*opened));
    ids.push_back(opened->id);
  }
  return ids;
}

namespace {

using Clock = std::chrono::steady_clock;

// Where the tunnels are now: the login node (with their ids there) or an allocation's agent.
struct TunnelsPlace {
  bool placed = false;
  std::vector<int> login_ids;
  remote::JobEndpoint* node = nullptr;  // compared with the link's, never used after it changed
  std::string job_id;

  // The node they were opened on is no longer the link's open one (its agent ended or another
  // allocation's was opened): looked at without asking Slurm.
  bool node_gone(ProjectLink& link) const {
    if (!node) return false;
    auto* now = link.open_allocation_node();
    return now != node || now->target().job_id != job_id;
  }

  void move_to(ProjectLink& link, remote::JobEndpoint* to, const deploy::ProjectConfig& config) {
    if (placed && to == node && (!to || to->target().job_id == job_id)) return;
    for (int id : login_ids) (void)link.endpoint().close_forward(id);  // their local ports are reused
    login_ids.clear();
    if (to) {
      spdlog::info("ferry.json's tunnels go to {}", to->description());
      (void)open_project_tunnels(*to, config);
      job_id = to->target().job_id;
    } else {
      if (placed) spdlog::info("no allocation: ferry.json's tunnels go to the login node");
      login_ids = open_project_tunnels(link.endpoint(), config);
      job_id.clear();
    }
    node = to;
    placed = true;
  }
};

}  // namespace

void keep_tunnels_with_allocation(ProjectLink& link, std::stop_token stop) {
  const auto config = link.config();
  TunnelsPlace place;
  auto ask_at = Clock::now();
  std::mutex mu;
  std::condition_variable_any cv;
  while (!stop.stop_requested()) {
    // On a node, Slurm is not asked: only the agent's end (or another allocation's agent) moves
    // them, and then at once.
    const bool ask = !place.placed || !place.node || place.node_gone(link);
    if (ask && Clock::now() >= ask_at && link.usable()) {
      auto node = link.allocation_node();  // asks Slurm
      if (node) {
        place.move_to(link, *node, config);
        ask_at = place.node ? Clock::now() : Clock::now() + kAllocationRefresh;
      } else {
        spdlog::debug("ferry.json's tunnels: {}", node.error().message);
        ask_at = Clock::now() + std::chrono::seconds(5);  // the link is mending: no storm of retries
      }
    }
    std::unique_lock lock(mu);
    cv.wait_for(lock, stop, std::chrono::seconds(1), [] { return false; });
  }
}

}  // namespace ferry::server
