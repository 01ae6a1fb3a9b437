// Progress for work the server starts itself (a command from a code lens, sync on save): LSP has
// the server create the token (window/workDoneProgress/create) and the client may cancel it
// (window/workDoneProgress/cancel). Work the client asked for with a workDoneToken uses that
// token instead (CallContext::progress).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "helper/server/client_questions.hpp"
#include "protocol/binding_table.hpp"
#include "protocol/cancellation.hpp"
#include "protocol/outgoing_requests.hpp"
#include "protocol/progress.hpp"

namespace ferry::server {

class ServerProgress {
 public:
  ServerProgress(protocol::OutgoingRequests& client, ClientQuestions& questions) : client_(client), questions_(questions) {}

  // One piece of work's progress and cancellation; the token is forgotten when it goes.
  class Work {
   public:
    Work(ServerProgress* owner, std::string token, protocol::WorkDoneProgress progress, protocol::CancellationSource source,
         protocol::CancellationToken call)
        : owner_(owner), token_(std::move(token)), progress_(std::move(progress)), source_(std::move(source)),
          call_(std::move(call)) {}
    ~Work();
    Work(const Work&) = delete;
    Work& operator=(const Work&) = delete;
    protocol::WorkDoneProgress& progress() { return progress_; }
    // Cancelled by the client's window/workDoneProgress/cancel, or by the call's own $/cancelRequest.
    bool cancelled() const { return source_.cancelled() || call_.cancelled(); }

   private:
    ServerProgress* owner_;
    std::string token_;
    protocol::WorkDoneProgress progress_;
    protocol::CancellationSource source_;
    protocol::CancellationToken call_;
  };

  // For a request: its own workDoneToken's progress if it sent one, else a server-made token if
  // the client supports them, else no progress. `call` may be null (work with no request).
  std::unique_ptr<Work> begin(const protocol::CallContext* call);
  void cancel(const std::string& token);

 private:
  protocol::OutgoingRequests& client_;
  ClientQuestions& questions_;
  std::mutex mutex_;
  std::map<std::string, protocol::CancellationSource> live_;
  std::uint64_t next_ = 1;
};

}  // namespace ferry::server
