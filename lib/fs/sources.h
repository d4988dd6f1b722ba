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

#include "util/fd.h"
#include "util/result.h"

namespace rcp {

/// One file the source will send, already opened.
struct SourceFile {
  Fd fd;
  uint64_t size = 0;
  uint32_t mode = 0644;
  int64_t mtime_ns = 0;  ///< modification time, ns since the epoch
  bool is_dir = false;  ///< a directory entry of a recursive copy (no data, no fd)
  std::string name;   ///< the name the sink gives it when its destination is a directory; may
                      ///< hold '/'-separated components in a recursive copy
  std::string shown;  ///< for messages
  std::string skip_note;  ///< not empty: not sent by design, only reported (see skipped_entry)
};
using SourceOpener = std::function<Result<SourceFile>()>;

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

/// What a recursive copy of the directory `dir` sends: the directory itself
/// (named `base`, unless base is "" — then its contents land directly in the
/// destination) and everything below it, files opened beneath dir when their
/// turn comes. Symlinks and special files are skipped and listed in `skipped`.
Result<std::vector<SourceOpener>> tree_sources(std::shared_ptr<Fd> dir, const std::string& base, unsigned mode,
                                               const std::string& shown, std::vector<std::string>& skipped);

/// One source path, expanded.
struct SourceSet {
  std::vector<SourceOpener> files;
  bool tree = false;                 ///< a directory was expanded: the destination must be a directory
  std::vector<std::string> skipped;  ///< below the tree, relative to it: symlinks and special files
};

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
Result<SourceSet> expand_source(int dir_fd, const std::string& path, const std::string& shown, bool beneath,
                                bool recursive, bool devices = false);

}  // namespace rcp
