/// What a copy sends, as the file system sees it: a source path expanded
/// into openers — one per file or directory entry, each opened only when the
/// source's turn comes, so a tree of 100,000 files holds one fd at a time.
/// One expansion serves both directions: rcp's push (the user's own paths,
/// looked up from the cwd) and rcpd's get (paths inside an export, every one
/// opened with openat2(RESOLVE_BENEATH), symlinks never followed).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <optional>

#include "fs/filter.h"
#include "fs/metadata.h"
#include "fs/path.h"
#include "util/fd.h"
#include "util/result.h"

namespace rcp {

/// One entry the source will send; a regular file already opened.
struct SourceFile {
  Fd fd;
  uint64_t size = 0;
  EntryMeta meta;       ///< type and permission bits, mtime, owner; a symlink's target, a device's number
  bool is_dir = false;  ///< a directory entry of a recursive copy (no data, no fd)
  std::shared_ptr<Fd> dir;    ///< a directory entry: the directory, open (its xattrs, -X/-A); may be null
  uint64_t dev = 0, ino = 0;  ///< a regular file's identity, and its link count (-H)
  uint64_t nlink = 1;
  /// As many bytes allocated as the file is long: it has no holes, and the
  /// two lseeks a hole search costs per file are saved (2 of the ~12
  /// syscalls a small file costs the source). A file whose allocation says
  /// otherwise (compressed, inline) is searched; a wrong "no holes" could
  /// only send zeros, never lose data.
  bool no_holes = false;
  std::string name;   ///< the name the sink gives it when its destination is a directory; may
                      ///< hold '/'-separated components in a recursive copy
  std::string shown;  ///< for messages
  std::string skip_note;  ///< not empty: not sent by design, only reported (see skipped_entry)
  /// The entry was listed (found by readdir) and was gone when it was stat'ed
  /// or opened (ENOENT, ESTALE): skip_note says so. Reported as a failure that
  /// vanished — rsync's "file has vanished", exit 24 when nothing else failed.
  int vanished_err = 0;
};
using SourceOpener = std::function<Result<SourceFile>()>;
/// What a copy sends, one entry at a time (nullopt: no more). A tree is
/// walked as the copy goes — one directory's names and one fd per level
/// held at a time — so memory stays flat however many files it has.
using SourceStream = std::function<std::optional<SourceOpener>()>;

/// A stream over a fixed list (tests, and a push's named files).
SourceStream stream_of(std::vector<SourceOpener> files);
/// The entries of parts 0 .. count-1 in order; part(i) is called only when
/// part i-1 is exhausted (a list of 1,000 directories holds one open). One
/// function for all the parts, not one per part: a push of 10,000 named
/// files built 10,000 closures, each with its own copy of the walk's
/// options, 5 ms before connecting (bench/README.md).
SourceStream chain(size_t count, std::function<SourceStream(size_t)> part);
/// An entry that fails with `e` when its turn comes (a FILE_SKIPPED error).
SourceOpener failed_entry(Error e);
/// A listed entry that failed with `e`: ENOENT or ESTALE mean it vanished
/// since the listing (SourceFile::vanished_err), anything else is failed_entry.
SourceOpener listed_entry_failed(Error e);
/// `op` for an entry found by listing a directory: a failure because the entry
/// vanished meanwhile becomes a SourceFile with vanished_err set.
SourceOpener listed(SourceOpener op);

/// An entry a copy reports but does not send: a symlink or special file
/// below a tree (rcpd tells the pulling client, as rcp tells its user on a
/// push). `note` says what and why.
SourceOpener skipped_entry(std::string note);

/// Opens a local regular file for sending, without ever blocking: the path
/// is resolved with O_PATH and fstat'ed first, and a FIFO, socket or device
/// is refused naming the path (EINVAL) — never opened; a directory is EISDIR.
/// With `devices` (rcp --copy-devices, a daemon's device module) a block
/// device is sent as a file of its size (BLKGETSIZE64); character devices
/// never are.
Result<SourceFile> open_source_file(int dir_fd, const std::string& path, std::string shown, bool beneath,
                                    bool devices = false);
/// open_source_file past its probe: path, which a stat or O_PATH probe of
/// the same name just described as `st`, refused by st's type or opened
/// (O_NONBLOCK) and sent only if the opened inode is st's (EAGAIN
/// otherwise). A caller that has looked at the path already saves the probe's
/// open, fstat and close (3 of the 9 system calls a named 4 KiB file cost).
Result<SourceFile> open_inspected_file(int dir_fd, const std::string& path, const struct stat& st, std::string shown,
                                       bool beneath, bool devices = false);
/// Test only: called in open_inspected_file between the probe and the open,
/// where a name swapped for another inode must be caught (null: nothing).
inline void (*g_between_probe_and_open)(const std::string& path) = nullptr;

/// The walk's regular file `leaf` in dir_fd (getdents said DT_REG), opened
/// at once — O_NOFOLLOW, O_NONBLOCK, O_NOCTTY — and sent only if fstat on
/// the opened file says regular; anything swapped in is refused (EAGAIN).
/// `confined` false: a push's own path, which a stat said is a regular file
/// (ExpandOptions::known_regular), opened as the user wrote it, symlinks
/// followed and not confined.
Result<SourceFile> open_listed_file(int dir_fd, const std::string& leaf, std::string shown, bool confined = true);

/// Both openers leave the file O_NONBLOCK. pread ignores that on a regular
/// file, so a source that reads on its loop (tmpfs, io/write_inline.h) never
/// pays for taking it off; io_uring may not ignore it (depending on the
/// kernel and the file system, a buffered read that would wait can fail with
/// EAGAIN instead of going to a worker; Linux 6.1 and 6.18 retried on ext4,
/// sysfs and 9p alike), so a reader going through the ring calls this once
/// first (the copy suite checks the F_SETFL with strace: no copy on these
/// kernels fails without it). One fcntl a file saved:
/// 10,000 x 4 KiB pushed from tmpfs, the sending rcp's task-clock -10 %
/// (bench/README.md).
Status clear_nonblock(int fd, const std::string& shown);

/// A symlink (its target read verbatim, never followed), FIFO, socket or
/// device at `path`, described but not opened: what -l and -D send.
Result<SourceFile> open_source_entry(int dir_fd, const std::string& path, std::string shown, bool beneath);

/// What a walk sends for these preserve options (-l, -L, -D).
WalkOptions walk_options(const Preserve& p);

/// How a source path is expanded.
struct ExpandOptions {
  bool beneath = false;    ///< resolved strictly beneath dir_fd (a daemon's export)
  bool recursive = false;  ///< -r: a directory with everything below it
  /// --files-from without -r: a directory is sent as an entry of its own,
  /// without its contents (as rsync), instead of being refused.
  bool dir_alone = false;
  /// The name the entry arrives under; unset: the path's last component.
  std::optional<std::string> name;
  /// --exclude/--include, tested on each entry's name as sent (the top one
  /// included); an excluded directory is not entered.
  std::shared_ptr<const FilterList> filter;
  /// Symlinks and special files below a tree that are not sent: reported
  /// here (rcp warns its user), or, when unset, sent as skipped_entry notes
  /// (rcpd tells the pulling client). The argument is the entry as shown ("src/link").
  std::function<void(const std::string&)> on_skip;
  /// A block device named as the path itself is sent (rcp --copy-devices,
  /// a daemon's device module); below a tree devices are always skipped.
  bool devices = false;
  /// Symlinks (-l: as symlinks, a path naming one is sent as one unless it
  /// ends in '/'; -L: followed), devices and specials (-D) sent as entries.
  /// (walk.beneath is set from `beneath`.)
  WalkOptions walk;
  /// The caller's stat of the path (as the walk options follow it) said a
  /// regular file: not looked at again, opened when its turn comes as
  /// open_listed_file (not confined) does. Only where !beneath. A push of
  /// 10,000 x 4 KiB files named as arguments: 10 system calls a file to 5
  /// (bench/README.md).
  bool known_regular = false;
};

/// One source path, expanded.
struct SourceSet {
  SourceStream files;
  bool tree = false;      ///< a directory was expanded: the destination must be a directory
  bool contents = false;  ///< the directory's contents land directly in the destination ("." or a root)
};
/// Every entry of a stream, opened (tests).
std::vector<SourceOpener> drain(SourceStream& s);

/// Expands `path` (looked up in dir_fd) into what a copy sends: a file as
/// itself, a directory — only when `recursive`, else EISDIR "(use -r)" — as
/// a directory entry named after its last component plus everything below it
/// (its contents land directly in the destination when the path is the root,
/// "." or "/").
///  - beneath == false (push: the user's own files): the path is followed as
///    the user wrote it; a path that does not exist yet is not an error here
///    but a failed file when its opener runs, so the other sources still go.
///  - beneath == true (get: inside an export): resolved strictly beneath
///    dir_fd; a path that cannot be opened fails the whole expansion.
///  - devices: a block device named as the path itself is sent (as
///    open_source_file); below a tree devices are always skipped.
///  - a path ending in '/' (rsync's rule) sends the directory's contents, as
///    "." and "/" do (SourceSet::contents).
Result<SourceSet> expand_source(int dir_fd, const std::string& path, const std::string& shown,
                                const ExpandOptions& opt);
/// The same with only `beneath`, `recursive`, `devices` and `wopt`; skipped entries are sent as notes.
Result<SourceSet> expand_source(int dir_fd, const std::string& path, const std::string& shown, bool beneath,
                                bool recursive, bool devices = false, const WalkOptions& wopt = {});

}  // namespace rcp
