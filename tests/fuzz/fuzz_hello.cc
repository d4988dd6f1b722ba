// libFuzzer: the connect-time hello and the session token behind it (decode_hello,
// decode_hello_token), as read from rdma_cm private data or the first bytes of a TCP stream,
// and what multi-rail sessions put behind them (decode_hello_rails, decode_rail_join) or send
// on the control stream (decode_rail_keys, decode_rail_stats, decode_control_moved). An accepted hello must re-encode to one that
// decodes to the same fields; accepted rails and rail keys must round-trip.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "wire/messages.h"
#include "wire/rails.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rcp::wire;
  const std::span<const uint8_t> in(data, size);
  auto token = decode_hello_token(in);
  if (token.ok() && token.value() == 0) std::abort();  // 0 means "no token" and must never come out
  if (auto k = decode_rail_keys(in); k.ok()) {
    if (k.value().rkeys.empty() || k.value().rkeys.size() > kMaxRails - 1) std::abort();
    auto k2 = decode_rail_keys(encode_rail_keys(k.value()));
    if (!k2.ok() || !(k2.value() == k.value())) std::abort();
  }
  if (auto c = decode_rail_stats(in); c.ok()) {
    if (c.value().empty() || c.value().size() > kMaxRails) std::abort();
    for (const RailCount& x : c.value())
      if (x.rail >= kMaxRails || x.chunks > x.bytes) std::abort();
    auto c2 = decode_rail_stats(encode_rail_stats(c.value()));
    if (!c2.ok() || c2.value() != c.value()) std::abort();
  }
  if (auto m = decode_control_moved(in); m.ok()) {
    auto m2 = decode_control_moved(encode_control_moved(m.value()));
    if (!m2.ok() || m2.value() != m.value() || in.size() != encode_control_moved(0).size()) std::abort();
  }
  if (auto j = decode_rail_join(in, kMaxRails - 1); j.ok() && (j.value() == 0 || j.value() > kMaxRails - 1)) std::abort();
  auto h = decode_hello(in);
  if (!h.ok()) return 0;
  if (auto rails = decode_hello_rails(in); rails.ok() && token.ok()) {
    if (rails.value().empty() || rails.value().size() > kMaxRails - 1) std::abort();
    auto r2 = decode_hello_rails(encode_hello_rails(h.value(), token.value(), rails.value()));
    if (!r2.ok() || r2.value() != rails.value()) std::abort();
  }
  const std::vector<uint8_t> once = encode_hello(h.value());
  if (once.size() != kHelloSize) std::abort();
  auto again = decode_hello(once);
  if (!again.ok() || encode_hello(again.value()) != once) std::abort();
  if (token.ok()) {
    const std::vector<uint8_t> with = encode_hello_token(h.value(), h.value().flags, token.value());
    auto t2 = decode_hello_token(with);
    if (!t2.ok() || t2.value() != token.value()) std::abort();
  }
  return 0;
}
