// libFuzzer: the connect-time hello and the session token behind it (decode_hello,
// decode_hello_token), as read from rdma_cm private data or the first bytes of a TCP stream.
// An accepted hello must re-encode to one that decodes to the same fields.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "wire/messages.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rcp::wire;
  const std::span<const uint8_t> in(data, size);
  auto token = decode_hello_token(in);
  if (token.ok() && token.value() == 0) std::abort();  // 0 means "no token" and must never come out
  auto h = decode_hello(in);
  if (!h.ok()) return 0;
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
