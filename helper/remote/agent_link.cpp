// Helper side of the agent wire: see agent_link.hpp.
#include "helper/remote/agent_link.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include <spdlog/spdlog.h>

#include "ferry/version.hpp"
#include "protocol/agent_wire.hpp"
#include "protocol/scratch_pool.hpp"

namespace ferry::remote {
namespace {

namespace ec = protocol::error_code;

ResponseError unavailable(std::string message) { return ResponseError{ec::kAgentUnavailable, std::move(message), {}}; }

// The tail of what the agent printed, for an error message a person can act on.
std::string printable_tail(const std::string& bytes) {
  std::string tail = bytes.size() > 200 ? bytes.substr(bytes.size() - 200) : bytes;
  for (char& c : tail)
    if (static_cast<unsigned char>(c) < 0x20 && c != '\n') c = '?';
  while (!tail.empty() && tail.back() == '\n') tail.pop_back();
  return tail;
}

}  // namespace

AgentLink::AgentLink(std::unique_ptr<ByteStream> stream)
    : stream_(std::move(stream)), decoder_(protocol::agent_frame_limits()) {}

AgentLink::~AgentLink() { stop(); }

std::expected<AgentInfo, ResponseError> AgentLink::handshake(Clock::time_point deadline) {
  std::string preamble;
  std::array<char, 4096> buf{};
  protocol::AgentMagic magic;
  while (true) {
    if (auto scan = protocol::scan_agent_preamble(preamble)) {
      if (!*scan) return std::unexpected(unavailable(scan->error()));
      magic = (*scan)->magic;
      decoder_.feed(std::string_view(preamble).substr((*scan)->consumed));
      break;
    }
    auto r = stream_->read_some(buf, deadline);
    switch (r.status) {
      case ReadStatus::data:
        preamble.append(buf.data(), r.bytes);
        continue;
      case ReadStatus::eof: {
        std::string msg = "the agent exited before printing its FERRY-AGENT line";
        if (describe_exit_) msg += " (" + describe_exit_() + ")";
        if (!preamble.empty()) msg += "; it printed: " + printable_tail(preamble);
        return std::unexpected(unavailable(msg));
      }
      case ReadStatus::timeout:
        return std::unexpected(unavailable("no FERRY-AGENT line from the agent before the deadline" +
                                           (preamble.empty() ? std::string() : "; it printed: " + printable_tail(preamble))));
      case ReadStatus::interrupted:
        return std::unexpected(unavailable("the link was closed during the handshake"));
      case ReadStatus::error:
        return std::unexpected(unavailable("reading the agent's output: " + r.error));
    }
  }
  if (magic.protocol_version != kAgentProtocolVersion) {
    return std::unexpected(ResponseError{
        ec::kAgentVersionMismatch,
        "agent speaks protocol " + std::to_string(magic.protocol_version) + ", this ferry speaks " +
            std::to_string(kAgentProtocolVersion) + " (agent version " + magic.agent_version + ")",
        json{{"agentProtocolVersion", magic.protocol_version}, {"agentVersion", magic.agent_version}}});
  }

  alive_ = true;
  reader_ = std::thread([this] { reader_loop(); });

  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) left = std::chrono::milliseconds(1);
  auto hello = call("agent/hello", json{{"protocolVersion", kAgentProtocolVersion}, {"helperVersion", kVersion}}, left);
  if (!hello) return std::unexpected(hello.error());
  const json& h = *hello;
  AgentInfo info;
  try {
    info.protocol_version = h.at("protocolVersion").get<int>();
    info.version = h.at("version").get<std::string>();
    info.pid = h.at("pid").get<long long>();
    info.root = h.at("root").get<std::string>();
    info.os = h.value("os", "");
    info.arch = h.value("arch", "");
    info.hostname = h.value("hostname", "");
  } catch (const json::exception& e) {
    return std::unexpected(ResponseError{ec::kAgentUnavailable, std::string("agent/hello: malformed result: ") + e.what(), {}});
  }
  if (info.protocol_version != kAgentProtocolVersion) {
    return std::unexpected(ResponseError{ec::kAgentVersionMismatch,
                                         "agent speaks protocol " + std::to_string(info.protocol_version) +
                                             ", this ferry speaks " + std::to_string(kAgentProtocolVersion),
                                         json{{"agentProtocolVersion", info.protocol_version}}});
  }
  return info;
}

std::expected<void, ResponseError> AgentLink::send(protocol::Message message) {
  const protocol::AgentFrame frame = protocol::encode_agent_frame_buffer(std::move(message));
  std::lock_guard lock(write_mutex_);
  // A writer queued behind one that the link's end woke must not start on a dead stream: not
  // every ByteStream fails a write at once once the peer is gone.
  if (!alive_) return std::unexpected(unavailable("the link to the agent is down"));
  for (std::string_view piece : frame.pieces())
    if (auto w = stream_->write_all(piece); !w) return std::unexpected(unavailable(w.error()));
  return {};
}

std::expected<json, ResponseError> AgentLink::call(std::string_view method, json params,
                                                   std::chrono::milliseconds timeout) {
  // Clamped so that "wait forever" timeouts cannot overflow the clock.
  auto deadline = Clock::now() + std::min<std::chrono::milliseconds>(timeout, std::chrono::hours(24 * 365));
  auto pending = std::make_shared<Pending>();
  std::int64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (!alive_) return std::unexpected(unavailable(std::string(method) + ": " + (failure_.empty() ? "not connected" : failure_)));
    id = next_id_++;
    pending_[id] = pending;
  }
  if (auto sent = send(protocol::Request{id, std::string(method), std::move(params)}); !sent) {
    std::lock_guard lock(mutex_);
    pending_.erase(id);
    return std::unexpected(unavailable(std::string(method) + ": " + sent.error().message));
  }
  std::unique_lock lock(mutex_);
  if (!cv_.wait_until(lock, deadline, [&] { return pending->outcome.has_value(); })) {
    pending_.erase(id);
    lock.unlock();
    // Best effort: the agent may have work to abandon; a late reply is dropped by id.
    (void)notify("$/cancelRequest", json{{"id", id}});
    return std::unexpected(ResponseError{ec::kRequestCancelled,
                                         std::string(method) + ": no reply from the agent within " +
                                             std::to_string(timeout.count()) + " ms",
                                         {}});
  }
  auto& outcome = *pending->outcome;
  if (!outcome) {
    ResponseError e = outcome.error();
    if (e.code == ec::kAgentUnavailable) e.message = std::string(method) + ": " + e.message;
    return std::unexpected(std::move(e));
  }
  json result = std::move(*outcome);
  return result;
}

std::expected<void, ResponseError> AgentLink::notify(std::string_view method, json params) {
  if (!alive_) return std::unexpected(unavailable(std::string(method) + ": the link to the agent is down"));
  return send(protocol::Notification{std::string(method), std::move(params)});
}

void AgentLink::set_notification_handler(NotificationHandler handler) {
  std::lock_guard lock(mutex_);
  on_notification_ = std::move(handler);
}

void AgentLink::set_exit_describer(std::function<std::string()> describer) {
  std::lock_guard lock(mutex_);
  describe_exit_ = std::move(describer);
}

std::size_t AgentLink::pending_calls() const {
  std::lock_guard lock(mutex_);
  return pending_.size();
}

std::string AgentLink::failure() const {
  std::lock_guard lock(mutex_);
  return failure_;
}

void AgentLink::deliver(protocol::Message&& message) {
  if (auto* resp = std::get_if<protocol::Response>(&message)) {
    if (!resp->id.is_number_integer()) {
      if (!resp->ok()) spdlog::warn("agent error without a request id: {}", std::get<ResponseError>(resp->outcome).message);
      return;
    }
    std::lock_guard lock(mutex_);
    auto it = pending_.find(resp->id.get<std::int64_t>());
    if (it == pending_.end()) return;  // timed out already
    if (resp->ok())
      it->second->outcome = std::move(std::get<json>(resp->outcome));
    else
      it->second->outcome = std::unexpected(std::move(std::get<ResponseError>(resp->outcome)));
    pending_.erase(it);
    cv_.notify_all();
    return;
  }
  if (const auto* note = std::get_if<protocol::Notification>(&message)) {
    NotificationHandler handler;
    {
      std::lock_guard lock(mutex_);
      handler = on_notification_;
    }
    if (handler) handler(*note);
    return;
  }
  const auto& req = std::get<protocol::Request>(message);
  (void)send(protocol::make_error(req.id, ec::kMethodNotFound, "the helper serves no methods to the agent"));
}

void AgentLink::fail_all(const std::string& why) {
  std::lock_guard lock(mutex_);
  alive_ = false;
  if (failure_.empty()) failure_ = why;
  for (auto& [id, p] : pending_) p->outcome = std::unexpected(unavailable(failure_));
  pending_.clear();
  cv_.notify_all();
}

// A frame still arriving whose body holds a big byte string near its start (a sync/read reply's
// chunk) has that string's bytes read from the stream into a buffer of their own, which the
// message then holds: they are not copied from the frame buffer into the message (8 MiB per
// chunk, ~5 % of the machine's CPU on a 1 GiB pull). Smaller strings are copied, as before.
void AgentLink::take_chunk() {
  constexpr std::size_t kTakeFrom = 1u << 20;
  constexpr std::size_t kHeadWithin = 4096;  // a reply's data string comes first in its result
  auto body = decoder_.body_in_progress();
  if (!body || body->diverted || body->length < kTakeFrom) return;
  auto at = protocol::find_byte_string(body->so_far.substr(0, kHeadWithin), kTakeFrom);
  if (!at || at->size > body->length - std::min(at->data, body->length)) return;  // the frame's own check refuses it
  protocol::ScratchPool::Buffer bytes = protocol::received_chunks().take_buffer();
  bytes.resize(at->size);  // one given back at this size is not zeroed again
  auto got = decoder_.divert(at->header, at->data, at->size, '\x40', reinterpret_cast<char*>(bytes.data()));
  if (!got) {
    protocol::received_chunks().put(std::move(bytes));
    return;
  }
  chunk_ = protocol::OwnedByteString{at->index, std::move(bytes)};
  chunk_have_ = *got;
}

void AgentLink::reader_loop() {
  // Read straight into the frame decoder, bodies decoded from views into it, and a big chunk
  // straight into its own buffer (take_chunk).
  constexpr std::size_t kReadAtMost = 1u << 20;
  while (true) {
    while (auto frame = decoder_.next_view()) {
      std::optional<protocol::OwnedByteString> chunk = std::exchange(chunk_, std::nullopt);
      if (!*frame) {
        if (frame->error().fatal) {
          fail_all("the agent sent a malformed frame: " + frame->error().message);
          return;
        }
        spdlog::warn("agent frame dropped: {}", frame->error().message);
        continue;
      }
      auto message = chunk ? protocol::decode_agent_body(**frame, std::move(*chunk)) : protocol::decode_agent_body(**frame);
      if (!message) {
        const auto& bad = message.error();
        spdlog::warn("bad message from the agent: {}", bad.error.message);
        if (bad.id.is_number_integer()) deliver(protocol::Response{bad.id, bad.error});
        continue;
      }
      deliver(std::move(*message));
    }
    if (!chunk_) take_chunk();
    ReadResult r;
    if (chunk_ && chunk_have_ < chunk_->bytes.size()) {
      auto* into = reinterpret_cast<char*>(chunk_->bytes.data()) + chunk_have_;
      r = stream_->read_some(std::span<char>(into, chunk_->bytes.size() - chunk_have_), std::nullopt);
      if (r.status == ReadStatus::data) chunk_have_ += r.bytes;
    } else {
      decoder_.fill(kReadAtMost, [&](char* into, std::size_t room) {
        r = stream_->read_some(std::span<char>(into, room), std::nullopt);
        return r.status == ReadStatus::data ? r.bytes : 0;
      });
    }
    switch (r.status) {
      case ReadStatus::data:
        break;
      case ReadStatus::eof: {
        std::function<std::string()> describe;
        {
          std::lock_guard lock(mutex_);
          describe = describe_exit_;
        }
        std::string why = stopping_ ? "the link to the agent was closed" : "the agent closed the link";
        if (describe && !stopping_) why = "the agent exited (" + describe() + ")";
        fail_all(why);
        return;
      }
      case ReadStatus::interrupted:
        fail_all("the link to the agent was closed");
        return;
      case ReadStatus::timeout:
        break;
      case ReadStatus::error:
        fail_all("reading from the agent: " + r.error);
        return;
    }
  }
}

void AgentLink::close_write() {
  std::lock_guard lock(write_mutex_);
  stream_->close_write();
}

void AgentLink::stop() {
  stopping_ = true;
  stream_->interrupt();
  if (reader_.joinable()) reader_.join();
  fail_all("the link to the agent was closed");
}

}  // namespace ferry::remote
