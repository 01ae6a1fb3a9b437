// The agent's run/* methods (see "Agent: runs" in protocol/spec/protocol.md): start a run under a
// supervisor, stream its output.log to the helper as run/output + run/exited notifications, and
// list, read, signal, feed, resize and remove runs, all from the state dir alone, so a new
// agent after a reconnect serves runs an older one started.
#pragma once

#include <expected>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "protocol/binding_table.hpp"
#include "protocol/jsonrpc.hpp"
#include "remote-runtime/agent/root_path.hpp"
#include "remote-runtime/agent/run/frame_writer.hpp"
#include "remote-runtime/agent/run/run_store.hpp"

namespace ferry::agent::run {

class RunMethods {
 public:
  RunMethods(RootPath root, fs::path state_dir, std::shared_ptr<FrameWriter> writer);
  ~RunMethods();
  RunMethods(const RunMethods&) = delete;
  RunMethods& operator=(const RunMethods&) = delete;

  // Binds run/start, attach, detach, input, signal, resize, list, read and remove (raw params
  // for now: each method reads its own). They run on the agent's reader thread (the inline
  // lane); `this` must outlive the table's use.
  void bind(protocol::BindingTable& table);

  // Call after each reply is written: streams asked for by run/attach start only then, so the
  // attach reply reaches the helper before the first run/output.
  void start_pending_streams();

  // Stops and joins every streaming thread (agent EOF / shutdown). The runs go on, except those a
  // run/signal with `killOnDisconnect` asked to stop: the helper that asked is gone (killed, as
  // an IDE's second Stop kills it, or its link lost), so they get SIGKILL.
  void stop_all();

  // How many attach streams are open (for tests).
  std::size_t stream_count() const { return tailers_.size() + pending_.size(); }

 private:
  struct Tailer;
  protocol::Response start(const protocol::Request& r);
  protocol::Response attach(const protocol::Request& r);
  protocol::Response detach(const protocol::Request& r);
  protocol::Response input(const protocol::Request& r);
  protocol::Response signal(const protocol::Request& r);
  protocol::Response resize(const protocol::Request& r);
  protocol::Response list(const protocol::Request& r);
  protocol::Response read(const protocol::Request& r);
  protocol::Response remove(const protocol::Request& r);
  void stop_stream(const std::string& id, const std::string& follower);
  void stop_streams(const std::string& id);  // every follower's
  // Streams `run` to `follower` from `offset` once the reply is out (run/attach, and run/start's
  // `attach`); `ports`: run/port events too, for a running run.
  void open_stream(const RunFiles& run, const RunStatus& status, const std::string& follower, std::uint64_t offset, bool ports);
  void kill_abandoned_runs();

  RootPath root_;
  RunStore store_;
  std::shared_ptr<FrameWriter> writer_;
  // By run id, or "id\nfollower" for a tagged stream: one stream per run and follower.
  std::map<std::string, std::unique_ptr<Tailer>> tailers_;
  std::vector<std::unique_ptr<Tailer>> pending_;
  // Offsets known to be record boundaries (returned as run/read's `next`, or validated), so
  // paging through a long log does not walk it from 0 on every call.
  std::map<std::string, std::set<std::uint64_t>> boundaries_;
  // Runs to kill if this agent's helper goes away before they end (run/signal's killOnDisconnect;
  // run/detach takes a run off).
  std::set<std::string> kill_on_disconnect_;
  std::expected<void, std::string> check_offset_cached(const std::string& id, int fd, std::uint64_t offset);
};

}  // namespace ferry::agent::run
