/// Reading and setting an entry's extended attributes (-X/-A) through a
/// descriptor, never a path: the daemon sets them only on what it opened
/// beneath its export. Which names are carried: fs/xattr_rules.h.
#pragma once

#include <string>
#include <vector>

#include "fs/xattr_rules.h"
#include "util/result.h"

namespace rcp {

struct Xattr {
  std::string name;
  std::string value;
};

/// The xattrs of fd (a regular file or a directory) that scope wants, in
/// the order the file system lists them. A file system without xattrs
/// (ENOTSUP) has none. A name listed but gone when read (ENODATA: removed
/// meanwhile) is left out. At most kMaxXattrsPerEntry and
/// kMaxXattrBytesPerEntry: a source with more fails the entry (E2BIG)
/// rather than send what the receiver refuses.
Result<std::vector<Xattr>> read_xattrs(int fd, const XattrScope& scope);

/// Sets x on fd (replacing a value it has). The error's code says ENOTSUP
/// (EOPNOTSUPP) when the file system keeps no xattrs of that namespace: the
/// caller warns once and goes on, as rsync does.
Status set_xattr(int fd, const Xattr& x);

/// Removes from fd every xattr scope wants that is not in keep (the copy
/// ends with exactly the source's set, as rsync -X). ENOTSUP: nothing to do.
Status remove_other_xattrs(int fd, const std::vector<Xattr>& keep, const XattrScope& scope);

/// Sets every xattr of want that scope carries on fd, then removes the
/// others scope carries: fd ends with exactly want's (rsync -X). The first
/// error is returned (a set that fails leaves the others tried).
Status apply_xattrs(int fd, const std::vector<Xattr>& want, const XattrScope& scope);

/// True for the errno values that mean "this file system has no xattrs
/// (of that namespace)": ENOTSUP (== EOPNOTSUPP on Linux).
bool xattrs_unsupported(int code);

}  // namespace rcp
