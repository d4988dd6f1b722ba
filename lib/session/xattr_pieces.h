/// -X/-A on the wire: an entry's xattrs cut into XATTR pieces (source), and
/// the pieces put back together and bounded (sink). Pure: no syscalls (the
/// reading and setting are fs/xattr.h's), unit tested in tests/unit/xattr_test.cc.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fs/xattr.h"
#include "fs/xattr_rules.h"
#include "util/result.h"
#include "wire/messages.h"

namespace rcp {

static_assert(wire::kMaxXattrNameLen == kMaxXattrName && wire::kMaxXattrValueLen == kMaxXattrValue,
              "the decoder and fs/xattr_rules.h hold a peer to the same bounds");

/// The XATTR messages carrying x for file_id, in order: ceil(size / 3072)
/// pieces, one empty piece for a 0-byte value.
std::vector<wire::XattrPiece> split_xattr(uint32_t file_id, const Xattr& x);

/// One entry's xattrs as they arrive. Pieces of a value come in order
/// (offset 0 first, each next one where the last ended, same name and
/// total) and a new value only once the last is complete; each value is
/// admitted by an XattrTally (well formed, asked for, no repeat, at most
/// kMaxXattrsPerEntry and kMaxXattrBytesPerEntry) before any of its bytes
/// are kept. Holds one value's bytes at most (the caller keeps the rest).
class XattrAssembler {
 public:
  /// scope: what a source may send in this session (privileged: trusted.*
  /// and security.* may arrive; the sink then decides what it sets).
  explicit XattrAssembler(const XattrScope& scope) : tally_(scope) {}
  /// Takes one piece (decoded, so within the wire's bounds); a value it
  /// completes is returned. EPROTO (the context says why) for a piece out of
  /// order or beyond the bounds.
  Result<std::optional<Xattr>> add(const wire::XattrPiece& p);
  /// A value begun and not complete (the entry must not end with one).
  bool in_progress() const { return cur_.has_value(); }
  const std::string& pending_name() const { return cur_->name; }

 private:
  XattrTally tally_;
  std::optional<Xattr> cur_;
  uint32_t total_ = 0;
};

}  // namespace rcp
