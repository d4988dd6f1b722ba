#include "fs/update_rule.h"

namespace rcp {

UpdateAction decide_update(const UpdateRules& r, const ExistingEntry& dst, uint64_t size, int64_t mtime_ns) {
  if (!dst.exists) return r.existing ? UpdateAction::skip : UpdateAction::write;
  if (r.ignore_existing) return UpdateAction::skip;
  if (!dst.regular) return UpdateAction::write;  // (replacing it fails or succeeds at commit, as before)
  if (r.update && dst.mtime_ns > mtime_ns) return UpdateAction::skip;
  if (r.checksum) return UpdateAction::write;  // content decides: chunks compared, identical files kept
  if (dst.size == size && dst.mtime_ns == mtime_ns) return UpdateAction::skip;
  return UpdateAction::write;
}

}  // namespace rcp
