// libFuzzer: the control-message decoder (wire::decode, peek_length) on arbitrary bytes. Any message
// it accepts must re-encode, and the re-encoding must decode to the same encoding (idempotent); a
// WALK_TOTALS it accepts has final 0 or 1 and a file count that fits a file id.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "wire/messages.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  (void)rcp::wire::peek_length(in);
  auto m = rcp::wire::decode(in);
  if (!m.ok()) return 0;
  // What the decoder promises its callers about WALK_TOTALS (session/walk_totals.h relies on it).
  if (auto* t = std::get_if<rcp::wire::WalkTotals>(&m.value()); t && (t->final > 1 || t->files > rcp::wire::kMaxWalkFiles))
    std::abort();
  std::vector<uint8_t> once;
  if (!rcp::wire::encode(m.value(), once).ok()) std::abort();
  auto again = rcp::wire::decode(once);
  if (!again.ok()) std::abort();
  std::vector<uint8_t> twice;
  if (!rcp::wire::encode(again.value(), twice).ok() || twice != once) std::abort();
  if (rcp::wire::type_of(again.value()) != rcp::wire::type_of(m.value())) std::abort();
  return 0;
}
