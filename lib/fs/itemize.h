/// -i/--itemize-changes: what a sink changed (or, with -n, would change) in
/// one destination entry, as rsync's `YXcstpoguax NAME` line. The sink
/// decides the bits (it alone sees the destination); on a push they travel
/// back in FILE_RESULT::changes, so the client prints the same lines either
/// way. Pure logic, unit tested in tests/unit/itemize_test.cc.
#pragma once

#include <cstdint>
#include <string>

#include "fs/metadata.h"
#include "fs/xattr.h"

namespace rcp {

/// Bits of wire::FileResult::changes (kChangeKnown: every bit a peer may set).
constexpr uint16_t kChangeNew = 1u << 0;       ///< created: nothing (or another type) stood there: "+++++++++"
constexpr uint16_t kChangeData = 1u << 1;      ///< a regular file's data was written (Y = '<' or '>')
constexpr uint16_t kChangeContent = 1u << 2;   ///< 'c': content differs (-c), or a symlink's target
constexpr uint16_t kChangeSize = 1u << 3;      ///< 's'
constexpr uint16_t kChangeTime = 1u << 4;      ///< 't'
constexpr uint16_t kChangePerms = 1u << 5;     ///< 'p'
constexpr uint16_t kChangeOwner = 1u << 6;     ///< 'o'
constexpr uint16_t kChangeGroup = 1u << 7;     ///< 'g'
constexpr uint16_t kChangeHardLink = 1u << 8;  ///< made as a hard link to an earlier file (-H): Y = 'h'
constexpr uint16_t kChangeAcl = 1u << 9;       ///< 'a' (-A): the POSIX ACLs differ (system.posix_acl_*)
constexpr uint16_t kChangeXattr = 1u << 10;    ///< 'x' (-X): other extended attributes differ
constexpr uint16_t kChangeKnown = (1u << 11) - 1;

/// The destination entry before the copy, as lstat saw it (exists = false: nothing there).
struct OldEntry {
  bool exists = false;
  unsigned type = 0;  ///< S_IFMT bits
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  unsigned mode = 0;  ///< 07777
  uint32_t uid = 0, gid = 0;
  std::string link_target;  ///< a symlink's
};
OldEntry old_entry_of(const struct stat& st);

/// What the copy does to `old` for an incoming entry of type `type` (S_IFMT;
/// 0 = regular) of `size` bytes described by `in` (uid/gid already mapped to
/// local ids), keeping what `p` asks for. `data`: a regular file's bytes are
/// written (the update rules did not skip it); a file they skip is left as
/// it is (0). `checksum` (-c): a file written although size and mtime match
/// has other content ('c'). `hard_link`: made as a link to an earlier file
/// of its group. 0: nothing changes, no line is printed.
uint16_t item_changes(const OldEntry& old, unsigned type, uint64_t size, const EntryMeta& in, const Preserve& p,
                      bool data, bool checksum, bool hard_link);

/// -X/-A: the letters an entry's xattrs change, from what stood there
/// (`old`) to what the source sent (`now`), both as read for one scope and
/// in any order: kChangeAcl if a system.posix_acl_* name differs (added,
/// removed or another value), kChangeXattr if any other does.
uint16_t xattr_changes(const std::vector<Xattr>& old, const std::vector<Xattr>& now);

/// rsync's line for an entry: "<f.st...... name" (sent: `sender` true; '>'
/// received), "cd+++++++++ dir/", "hf+++++++++ link". Directories get a
/// trailing '/'. Empty when changes == 0.
std::string itemize_line(uint16_t changes, unsigned type, const std::string& name, bool sender);
/// A --delete removal: "*deleting   name" (a directory with '/').
std::string itemize_deleted(const std::string& name, bool is_dir);

}  // namespace rcp
