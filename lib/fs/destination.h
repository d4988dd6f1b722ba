/// Where received files land, and under which name: the one owner of the
/// sink's file-system policy. resolve_destination_* turn what the user (rcp)
/// or the OPEN (rcpd) names into a Destination; DestinationTree then names
/// and opens each entry the source announces — refusing unsafe names,
/// creating the directories of a recursive copy beneath the destination
/// (never following a symlink), and starting the temp file that becomes the
/// file only once it is complete and verified (fs/tempfile.h).
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "fs/blockdev.h"
#include "fs/itemize.h"
#include "fs/prune.h"
#include "fs/metadata.h"
#include "fs/tempfile.h"
#include "fs/update_rule.h"
#include "util/fd.h"
#include "util/result.h"

namespace rcp {

/// What a pulling client asked for, and so the only names it accepts.
struct ExpectedNames {
  std::string base;   ///< the requested path's last component; "" for an export's root (with tree)
  bool tree = false;  ///< -r: base itself and names below it ("base/..."); else exactly base, a file
  /// Further sources of the same session (one OPEN, many paths), as base.
  std::vector<std::string> more;
  /// --files-from: base and more are paths that arrive as themselves
  /// ("a/b/c"), each a file or a directory (with tree: and names below it).
  bool relative = false;
};

/// Where a sink writes one incoming file: a directory and, unless the
/// destination is the directory itself, the name to give the file.
struct Destination {
  Fd dir;
  bool is_dir = false;  ///< true: use the name the source sends
  std::string leaf;     ///< the target name when !is_dir
  std::string shown;    ///< for messages: the path as the user wrote it
  /// Set by a pulling client for each session: a name the source sends
  /// outside it fails that file, nothing written. Unset (a daemon receiving
  /// a push): any safe name, the client chose them.
  std::optional<ExpectedNames> expect;
  /// Set: the destination is this block device, written in place (rcp
  /// --write-devices, or a daemon's device module); it takes exactly one
  /// file, no larger than the device.
  std::shared_ptr<DeviceTarget> device;
  /// --delete (a directory destination only): what the source does not
  /// send is removed from the directories it sends (fs/prune.h).
  std::optional<PruneOptions> prune;
  /// Nothing stood in this directory when it was resolved: the resolve made
  /// it, or found it empty (`rcp *.log host:mod/new/` after a mkdir). The
  /// first DestinationTree over it looks nothing up (see
  /// DestinationTree::fresh_). Taken (cleared) by that tree.
  bool empty = false;
};

/// What may stand where a file is about to land, with a rename over it:
/// nothing, a regular file, or a symlink (replaced, not followed). A FIFO,
/// socket or device never is — the rename would drop the node and write
/// nothing where the user meant (a disk): EEXIST naming the path and what
/// it is.
Status check_replaceable(int dir_fd, const std::string& name, const std::string& shown);
/// The same for an entry already lstat'ed.
Status check_replaceable(const struct stat& st, const std::string& shown);

/// How a client's own destination treats a block device it names.
struct LocalDeviceOptions {
  bool write_devices = false;  ///< --write-devices: write it in place; else refused
  bool force = false;          ///< --force: even when mounted (and not O_EXCL)
};

/// Resolves a put destination inside an export: an existing directory, or a
/// not-yet-existing (or regular) file whose parent directory exists.
/// `multi`: several sources, so the destination must be a directory.
/// `make_dir` (rsync's --mkpath, rcp's default for -r, several sources or a
/// trailing '/'): the destination is a directory, created with its missing
/// parents (beneath the export, never through a symlink) when it does not exist
/// (`dry_run`: not created, see resolve_destination_local).
Result<Destination> resolve_destination_beneath(int root_fd, std::string_view rel, bool multi,
                                                std::string shown, bool make_dir = false, bool dry_run = false);
/// The same for a local destination of the client (no confinement: the user
/// names their own files). A path that is (or links to) a block device is
/// refused unless dev.write_devices, then opened as Destination::device; a
/// character device, FIFO or socket is always refused. A path ending in '/'
/// is a directory: with make_dir it is created, never taken as a file name.
/// `dry_run` (-n): a missing directory destination is not created: the
/// Destination has no fd (is_dir, every entry new).
Result<Destination> resolve_destination_local(const std::string& path, bool multi, LocalDeviceOptions dev = {},
                                              bool make_dir = false, bool dry_run = false);

/// One entry the source announced, placed in the destination.
struct PlacedEntry {
  std::string shown;           ///< for messages: the destination path of the entry
  unsigned mode = 0;           ///< a file: the permission bits it gets at commit (see place())
  std::string rel;             ///< a directory entry: its path below the destination
  std::shared_ptr<Fd> parent;  ///< a file below the destination: its directory (outlives tmp)
  TempFile tmp;                ///< a file: where its bytes go until commit
  int dir_fd = -1;             ///< the directory it goes in (borrowed: parent or the destination)
  std::string leaf;            ///< its name there
  std::string error;           ///< not empty: refused; this entry fails, the session goes on
  bool skip = false;           ///< a file the destination already has (UpdateRules): no temp file
  Fd basis;                    ///< a file being replaced, opened for reading: chunks to reuse
  uint64_t basis_size = 0;
  /// What stood at the destination before (for -i, fs/itemize.h): looked up
  /// beneath the destination, never through a symlink.
  OldEntry old;
  /// A dry run (UpdateRules::dry_run) of a file the rules would write:
  /// nothing was opened or created for it.
  bool dry_write = false;
};

/// What the source says of a file, for the update decision (fs/update_rule.h).
struct IncomingFile {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  const UpdateRules* rules = nullptr;  ///< null: always write, no basis (as before)
};

/// The entries a sink creates under its Destination. Keeps the directories
/// of a recursive copy open, so a tree of many files in one directory costs
/// one open of that directory, not one per file.
class DestinationTree {
 public:
  explicit DestinationTree(Destination& dest, Preserve preserve = {}) : dest_(dest), preserve_(preserve) {
    if (dest_.empty) fresh_.insert("");  // the destination itself: "rcp -r dir/ host:new/"
    dest_.empty = false;
  }
  DestinationTree(const DestinationTree&) = delete;

  /// Names and opens the entry `name` (from FILE_BEGIN; '/'-separated below a
  /// directory destination) of file type `type` (S_IFMT bits; 0 = regular)
  /// with permission bits `mode`; a file gets its temp file, a directory is
  /// only named (make_dir() creates it at its end), a symlink or special
  /// gets its directory and leaf (fs/metadata.h creates it). A name with "..", an absolute path or anything to clean away is
  /// refused, quoting `peer`; so are a second entry, or a directory, sent to
  /// a single-file destination, and a name outside Destination::expect.
  /// Modes, as rsync and scp without -p: never setuid, setgid or sticky
  /// from the wire (0777 only); a new file gets the source's bits less the
  /// umask; a file that replaces an existing one keeps that file's
  /// permission bits (0600 stays 0600 whatever the peer sends). With -p
  /// (Preserve::perms) the source's 07777 bits exactly, as rsync -p.
  /// `in.size` (from FILE_BEGIN) also matters for a device destination: a
  /// file larger than the device is refused before anything is written.
  /// With `in.rules`: a file the rules say the destination already has is
  /// not opened at all (skip), and an existing regular file that is to be
  /// replaced is opened read-only as the basis for chunk reuse.
  /// `no_data` (a hard link, -H): a file is only named, like a symlink (dir_fd, leaf).
  PlacedEntry place(const std::string& name, unsigned type, unsigned mode, const std::string& peer,
                    const IncomingFile& in = {}, bool no_data = false);

  /// The directory holding the entry `name` (as sent, already placed once):
  /// the destination itself or a directory below it, opened one component
  /// at a time, never through a symlink. Kept alive by the returned pointer.
  Result<std::shared_ptr<Fd>> parent_of(const std::string& name);

  /// Creates the directory entry `rel` where missing, with `mode` & 0777
  /// less the umask; an existing directory keeps its mode (a push of a 0777
  /// tree never widens an existing 0700 directory).
  Status make_dir(const std::string& rel, unsigned mode, const std::string& shown);

 private:
  /// The directory `rel` below the destination, created where missing and
  /// opened beneath it once per session: a tree of 10,000 files in one
  /// directory otherwise costs 2 openat2 + mkdirat + 2 close per file (about
  /// a third of the sink's syscalls per small file, strace -c).
  Result<std::shared_ptr<Fd>> subdir(const std::string& rel, unsigned mode);
  /// A dry run's subdir(): the directory if it exists, an invalid Fd (every
  /// lookup in it finds nothing) if it would be created. Nothing is made.
  std::shared_ptr<Fd> existing_subdir(const std::string& rel);
  /// What stands at `leaf` in dir_fd now (nothing when dir_fd < 0).
  static OldEntry look(int dir_fd, const std::string& leaf);
  /// The same, also giving the lstat; false (o empty) when nothing is there.
  static bool look(int dir_fd, const std::string& leaf, OldEntry& o, struct stat& st);
  /// place() for a device destination: the one file, if it fits.
  PlacedEntry place_on_device(bool is_dir, uint64_t size);

  static constexpr size_t kDirCache = 64;
  Destination& dest_;
  Preserve preserve_;
  uint32_t seen_ = 0;  // entries placed so far
  std::unordered_map<std::string, std::shared_ptr<Fd>> dirs_;
  /// Of dirs_, those this session created: nothing stands in them that the
  /// session did not put there, so place() does not look for an old entry
  /// (an lstat that fails costs a negative dentry: 7 % of the daemon's time
  /// receiving 10,000 new 4 KiB files, perf). A name sent twice still cannot
  /// clobber blindly: a new file's link fails with EEXIST and falls back to
  /// temp + rename, a symlink or special is renamed into place.
  std::unordered_set<std::string> fresh_;
};

}  // namespace rcp
