/// Which extended attributes -X/-A carry, and the bounds a receiver holds a
/// sender to (pure: no syscalls; fs/xattr.h does the reading and setting).
///
/// As rsync on Linux: -X carries user.* always and trusted.*/security.* only
/// when the receiver runs as root (only root may set them); -A carries the
/// POSIX ACLs, which Linux keeps as the xattrs system.posix_acl_access and
/// system.posix_acl_default (their bytes are carried verbatim). No other
/// system.* name is ever carried: those are file-system controls, not data.
#pragma once

#include <cstddef>
#include <set>
#include <string>
#include <string_view>

#include "util/result.h"

namespace rcp {

/// Linux's XATTR_NAME_MAX: the longest name the kernel accepts.
constexpr size_t kMaxXattrName = 255;
/// Linux's XATTR_SIZE_MAX: the largest value the kernel accepts.
constexpr size_t kMaxXattrValue = 65536;
/// Most xattrs per entry a receiver accepts. ext4 keeps all of an inode's
/// xattrs in one 4 KiB block (about 100 short ones at most); 256 leaves room
/// for XFS/btrfs and still bounds the work one entry can ask for.
constexpr size_t kMaxXattrsPerEntry = 256;
/// Most name + value bytes per entry a receiver accepts: 16 values of the
/// largest size. The receiver sets each xattr as it arrives (it buffers one
/// value, never an entry's list), so this bounds disk, not memory.
constexpr size_t kMaxXattrBytesPerEntry = 16 * kMaxXattrValue;

/// What a copy carries: -X (xattrs), -A (acls); privileged: the receiving
/// side runs as root (trusted.* and security.* are then carried too).
struct XattrScope {
  bool xattrs = false;
  bool acls = false;
  bool privileged = false;
};

/// "" when name is well formed for the wire: 1 to kMaxXattrName bytes, no
/// NUL, a known namespace prefix ("user.", "trusted.", "security.",
/// "system.") followed by at least one byte; else why not.
std::string xattr_name_problem(std::string_view name);

/// Does this copy carry the xattr `name` (well formed, see above)?
bool xattr_wanted(std::string_view name, const XattrScope& scope);

/// The receiver's account of one entry's xattrs: each one that arrives is
/// admitted only if well formed, wanted, not a repeat, and within the
/// per-entry count and byte bounds. Holds at most kMaxXattrsPerEntry names.
class XattrTally {
 public:
  explicit XattrTally(const XattrScope& scope) : scope_(scope) {}
  /// Admits name with a value of value_size bytes, or says why not (EPROTO).
  Status admit(std::string_view name, size_t value_size);
  size_t count() const { return names_.size(); }
  size_t bytes() const { return bytes_; }

 private:
  XattrScope scope_;
  std::set<std::string, std::less<>> names_;
  size_t bytes_ = 0;
};

}  // namespace rcp
