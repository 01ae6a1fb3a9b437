// Ctrl-C escalation: INT, then TERM, then KILL.
#include "helper/run/interrupt_escalation.hpp"

namespace ferry::run {

InterruptEscalation::Step InterruptEscalation::next(std::string_view run_id) {
  ++presses_;
  std::string id(run_id);
  if (presses_ == 1) return {"INT", "sent SIGINT to run " + id + "; press Ctrl-C again to send SIGTERM"};
  if (presses_ == 2) return {"TERM", "sent SIGTERM to run " + id + "; press Ctrl-C again to send SIGKILL"};
  return {"KILL", "sent SIGKILL to run " + id};
}

}  // namespace ferry::run
