// Fuzzes the IDE wire's untrusted path end to end: frame decoding (tiny limits, so oversize,
// resync and too-big-to-skip paths run), JSON decoding, message validation and dispatch through
// a binding table with inline and queued worker handlers, batches, cancellation and the LSP
// lifecycle.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string_view>

#include "protocol/dispatcher.hpp"
#include "protocol/framing.hpp"
#include "protocol/messages.hpp"

namespace {

using namespace ferry::protocol;

const BindingTable& table() {
  static const BindingTable t = [] {
    BindingTable b;
    b.request<InitializeParams, EmptyResult>(method::kInitialize, [](const InitializeParams&, CallContext&) {
      return std::expected<EmptyResult, ResponseError>(EmptyResult{});
    });
    b.request<EmptyParams, NullResult>(method::kShutdown, [](const EmptyParams&, CallContext&) {
      return std::expected<NullResult, ResponseError>(NullResult{});
    });
    b.request<PingParams, PingResult>(method::kPing, [](const PingParams& p, CallContext&) {
      return std::expected<PingResult, ResponseError>(PingResult{p.payload});
    });
    b.request<TestSleepParams, TestSleepResult>(
        method::kTestSleep,
        [](const TestSleepParams& p, CallContext& ctx) -> std::expected<TestSleepResult, ResponseError> {
          auto progress = ctx.progress();
          progress.begin("fuzz", std::nullopt, static_cast<int>(p.ms % 200));
          progress.report("r", p.steps * 7);
          if (ctx.cancelled()) return std::unexpected(cancelled_error(ctx.method()));
          return TestSleepResult{p.ms};
        },
        Execution::worker);
    b.request<ProjectLoadParams, json>(method::kProjectLoad, [](const ProjectLoadParams& p, CallContext&) {
      return std::expected<json, ResponseError>(to_json(p));
    });
    b.notification<SetTraceParams>(method::kSetTrace, [](const SetTraceParams&, CallContext&) {});
    b.notification<EmptyParams>(method::kInitialized, [](const EmptyParams&, CallContext&) {});
    return b;
  }();
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::deque<std::function<void()>> queued;
  std::size_t sent = 0;
  DispatcherHooks hooks;
  hooks.send = [&](const json& m) {
    // Every outgoing message must serialise.
    sent += encode_frame(encode_body(m, Encoding::json)).size();
  };
  hooks.post = [&](std::function<void()> t) { queued.push_back(std::move(t)); };
  hooks.on_exit = [](int) {};
  Dispatcher d(table(), hooks, DispatcherOptions{Encoding::json, true});

  // Tiny limits: bodies over 4 KiB are skipped up to 16 KiB, past that the stream ends.
  FrameDecoder decoder(FrameLimits{.max_body = 4096, .max_header = 256, .max_skip = 16384});
  std::string_view input(reinterpret_cast<const char*>(data), size);
  // Feed in uneven slices so split headers and bodies are exercised.
  std::size_t pos = 0, slice = 1;
  while (pos < input.size() && !decoder.failed()) {
    std::size_t n = std::min(slice, input.size() - pos);
    decoder.feed(input.substr(pos, n));
    pos += n;
    slice = slice * 3 % 61 + 1;
    while (auto f = decoder.next()) {
      if (f->has_value()) d.handle_body(**f);
      if (!f->has_value() && f->error().fatal) break;
    }
    // Run half the queued work now, the rest later, so cancellations race with queued tasks.
    for (std::size_t i = queued.size() / 2; i > 0; --i) {
      auto t = std::move(queued.front());
      queued.pop_front();
      t();
    }
  }
  // The whole input as one unframed body too: the JSON path sees every input, not only
  // well-framed ones.
  d.handle_body(input);
  d.cancel_all();
  while (!queued.empty()) {
    auto t = std::move(queued.front());
    queued.pop_front();
    t();
  }
  if (d.in_flight() != 0) __builtin_trap();  // reply-exactly-once: nothing may be left pending
  return 0;
}
