// libFuzzer: the control-message decoder (wire::decode, peek_length) on arbitrary bytes. Any message
// it accepts must re-encode, and the re-encoding must decode to the same encoding (idempotent); a
// WALK_TOTALS it accepts has final 0 or 1 and a file count that fits a file id; a HOLE a non-empty
// range that does not wrap; an ENTRY_DELETED a name of 1 to kMaxPath bytes without NUL.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
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
  // HOLE: the sink's ledger adds offset + length (session/ledger.h relies on it not wrapping).
  if (auto* h = std::get_if<rcp::wire::Hole>(&m.value()); h && (h->length == 0 || h->offset > UINT64_MAX - h->length))
    std::abort();
  // ENTRY_DELETED: the pushing client prints the name (-i/-n) as one line.
  if (auto* d = std::get_if<rcp::wire::EntryDeleted>(&m.value());
      d && (d->name.empty() || d->name.size() > rcp::wire::kMaxPath || d->name.find('\0') != std::string::npos ||
            d->is_dir > 1))
    std::abort();
  // FILE_SKIPPED: vanished (exit 24 instead of 23) only for a real failure.
  if (auto* k = std::get_if<rcp::wire::FileSkipped>(&m.value()); k && (k->vanished > 1 || (k->vanished && k->err == 0)))
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
