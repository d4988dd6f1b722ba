// libFuzzer: the authentication messages (wire::decode_auth). The encoding is canonical: any
// message the decoder accepts re-encodes to exactly the input bytes.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "wire/auth_messages.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rcp::wire;
  const std::span<const uint8_t> in(data, size);
  (void)is_auth_frame(in);
  auto m = decode_auth(in);
  if (!m.ok()) return 0;
  std::vector<uint8_t> out;
  if (!encode_auth(m.value(), out).ok()) std::abort();
  if (out.size() != size || !std::equal(out.begin(), out.end(), data)) std::abort();
  return 0;
}
