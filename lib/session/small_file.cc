#include "session/small_file.h"

namespace rcp {

bool small_files_whole(const SessionOptions& opt) {
  const UpdateRules& r = opt.rules;
  const Preserve& p = opt.preserve;
  return !r.dry_run && !r.checksum && !r.partial && !opt.fsync && !p.xattrs && !p.acls && !p.sparse;
}

}  // namespace rcp
