/// What a faithful copy keeps besides the bytes (rsync's -p -t -o -g -l -D
/// -H -S): which of it to keep (Preserve, carried in OPEN), what a source
/// says about one entry (EntryMeta, carried in FILE_BEGIN), and applying it
/// on the receiving side — never through a symlink.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <cstdint>
#include <string>

#include "util/result.h"

namespace rcp {

/// Which metadata a copy keeps. The bit values travel in wire::Open::preserve.
struct Preserve {
  bool perms = false;        ///< -p: exact permission bits (07777), existing entries too
  bool times = false;        ///< -t: mtimes to the nanosecond (directories after their contents)
  bool owner = false;        ///< -o: owner (applied only when the receiver runs as root)
  bool group = false;        ///< -g: group (root: any; else a group the receiver belongs to)
  bool links = false;        ///< -l: symlinks as symlinks, target verbatim
  bool copy_links = false;   ///< -L: the source follows symlinks (wins over -l)
  bool devices = false;      ///< -D: block and character devices (created only by root)
  bool specials = false;     ///< -D: FIFOs and sockets
  bool hard_links = false;   ///< -H: hard-link groups kept within one transfer
  bool sparse = false;       ///< -S: the sink leaves holes unallocated (a source never sends them)
  /// --discard: a device destination gets its holes discarded (fallocate
  /// PUNCH_HOLE, else BLKDISCARD) instead of written as zeros.
  bool discard = false;
  bool numeric_ids = false;  ///< --numeric-ids: uid/gid as numbers, names not mapped
  bool xattrs = false;       ///< -X: extended attributes (fs/xattr_rules.h says which)
  bool acls = false;         ///< -A: POSIX ACLs (as the system.posix_acl_* xattrs; implies -p)
  /// Not on the wire: may the sender make setuid/setgid files or devices
  /// here? rcp receiving a pull: yes (the user asked for them). rcpd
  /// receiving a push: never, even as root — a client must not plant a
  /// setuid executable or a device node in an export.
  bool trusted_sender = true;

  static constexpr uint32_t kPerms = 1u << 0, kTimes = 1u << 1, kOwner = 1u << 2, kGroup = 1u << 3,
                            kLinks = 1u << 4, kCopyLinks = 1u << 5, kDevices = 1u << 6, kSpecials = 1u << 7,
                            kHardLinks = 1u << 8, kSparse = 1u << 9, kNumericIds = 1u << 10,
                            kDiscard = 1u << 11, kXattrs = 1u << 12, kAcls = 1u << 13;
  static constexpr uint32_t kKnown = (1u << 14) - 1;
  uint32_t bits() const;
  static Preserve from_bits(uint32_t bits);  ///< unknown bits ignored (the decoder refuses them)
  /// -a: -rlptgoD (recursion is the caller's).
  static Preserve archive();
};

/// What a source says about one entry besides its name and size.
struct EntryMeta {
  uint32_t mode = 0644;    ///< S_IFMT type bits | 07777
  int64_t mtime_ns = 0;    ///< nanoseconds since the epoch
  uint32_t uid = 0, gid = 0;
  std::string user, group;  ///< names for uid/gid ("" = none: map numerically)
  std::string link_target;  ///< a symlink's target, verbatim
  uint64_t rdev = 0;        ///< a device's number
};

/// Nanoseconds since the epoch from a stat's timespec, and back (floor
/// division: times before 1970 keep 0 <= tv_nsec < 1e9).
int64_t to_ns(const struct timespec& ts);
struct timespec from_ns(int64_t ns);

/// The metadata of an fstat result (names not looked up).
EntryMeta meta_of(const struct stat& st);

/// uid/gid ↔ names, cached (bounded) per thread: a tree of 100,000 files
/// owned by one user costs one lookup.
std::string user_name(uint32_t uid);
std::string group_name(uint32_t gid);
/// The receiver's id for what the source sent: the local id of `name` if
/// given and known (and !numeric), else `id` as sent.
uint32_t map_uid(const std::string& name, uint32_t id, bool numeric);
uint32_t map_gid(const std::string& name, uint32_t id, bool numeric);

/// Does this process run as root (may chown, mknod a device)?
bool running_as_root();

/// The permission bits -p applies: all 07777 when the receiver is root (it
/// also applies the owner); otherwise never setuid/setgid on a file — a
/// peer must not make an executable that runs as the receiver's user — and
/// never setuid on a directory (setgid and sticky stay: they grant nothing).
unsigned preserved_bits(unsigned mode, bool is_dir, bool as_root);

/// The owner and group to apply, or -1 where not to touch: owner only as
/// root; group as root or (best effort, EPERM ignored by the callers) else.
struct Ownership {
  int64_t uid = -1, gid = -1;
};
Ownership ownership_for(const EntryMeta& m, const Preserve& p);

/// Applies owner/group, then (if `mode_bits` >= 0) permission bits, then
/// (with p.times) the mtime to an open regular file or directory. A group the
/// receiver may not set (not root, not a member) is left as is, as rsync does.
Status apply_fd_meta(int fd, const EntryMeta& m, const Preserve& p, int mode_bits, const std::string& shown);

/// The same for an entry that is not opened (a symlink, a device, a FIFO):
/// `leaf` in `dir_fd`, never following a symlink.
Status apply_entry_meta(int dir_fd, const std::string& leaf, const EntryMeta& m, const Preserve& p,
                        const std::string& shown);

/// Creates a symlink `leaf` → `target` (verbatim) in dir_fd, replacing an
/// existing non-directory entry atomically (made under a temp name, then
/// renamed): nothing is ever written through an existing symlink.
Status make_symlink(int dir_fd, const std::string& leaf, const std::string& target, const std::string& shown);

/// Creates `leaf` in dir_fd as a hard link to `from_leaf` in from_dir (never
/// following a symlink there), replacing an existing non-directory entry.
Status make_hardlink(int from_dir, const std::string& from_leaf, int dir_fd, const std::string& leaf,
                     const std::string& shown);

/// Creates a FIFO, socket node or device `leaf` in dir_fd the same way.
Status make_special(int dir_fd, const std::string& leaf, uint32_t mode, uint64_t rdev, const std::string& shown);

}  // namespace rcp
