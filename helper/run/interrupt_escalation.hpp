// Ctrl-C on a run as a terminal user expects it: the first press interrupts, the second
// terminates, the third and later kill. Pure state; the CLI wires it to SIGINT.
#pragma once

#include <string>
#include <string_view>

namespace ferry::run {

class InterruptEscalation {
 public:
  struct Step {
    std::string signal;  // run/signal's name: "INT", "TERM", "KILL"
    std::string note;    // one line for stderr
  };
  Step next(std::string_view run_id);
  int presses() const { return presses_; }

 private:
  int presses_ = 0;
};

}  // namespace ferry::run
