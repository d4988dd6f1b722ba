/// Atomic output: a file is written under a hidden temporary name beside its
/// target and renamed into place only after it is complete and verified. The
/// destructor unlinks a temp file that was never committed, so a failed or
/// aborted copy leaves nothing behind.
#pragma once

#include <string>

#include "util/fd.h"
#include "util/result.h"

namespace rcp {

/// mode's permission bits less the process umask (022 when it cannot be
/// read): what a new file or directory of a copy gets, as with rsync and scp
/// without -p.
unsigned umasked(unsigned mode);

class TempFile {
 public:
  /// Creates ".<target>.rcp-XXXXXXXX" in dir_fd (O_EXCL) with `mode` (less
  /// the umask). Passing the final mode here lets commit() skip an fchmod in
  /// the common case: one syscall less per file, which is ~5% of a small
  /// file's cost on the sink.
  static Result<TempFile> create(int dir_fd, const std::string& target, std::string shown, unsigned mode = 0600);
  /// For a target that does not exist yet: an unnamed file (O_TMPFILE) in
  /// dir_fd, given its name by linkat() at commit(). Nothing to clean up if
  /// the process dies, and no directory entry made and renamed: on tmpfs,
  /// 10,000 4 KiB files take 16.7 us each against 23 us for create+rename
  /// (bench/fsfloor, one thread). ENOTSUP when the file system has no
  /// O_TMPFILE or this process could not link it (no CAP_DAC_READ_SEARCH
  /// for AT_EMPTY_PATH and no /proc/self/fd): create() instead.
  static Result<TempFile> create_unnamed(int dir_fd, const std::string& target, std::string shown, unsigned mode);
  /// Tests: name unnamed files through /proc/self/fd (true) as a process
  /// without CAP_DAC_READ_SEARCH does, or as this process would (false).
  static void link_via_proc_for_test(bool on);
  /// Not a temp file: a block device written in place (fs/blockdev.h).
  /// commit() fsyncs it (always: the copy is only done once the data is on
  /// the device) and renames nothing; discard() only closes it.
  static TempFile on_device(Fd fd, std::string shown);
  /// --partial: opens (or creates) ".<target>.rcp-partial" in dir_fd for
  /// reading and writing, locked (flock, EWOULDBLOCK when another session
  /// holds it). It is kept, not removed, when the copy does not finish, so
  /// the next run finds it by the same target name and reuses the chunks in
  /// it whose digests match the source's (nothing else is trusted in it).
  static Result<TempFile> open_partial(int dir_fd, const std::string& target, std::string shown, unsigned mode);
  /// The name open_partial() uses for `target`.
  static std::string partial_name(const std::string& target);
  TempFile() = default;
  TempFile(TempFile&&) noexcept;
  TempFile& operator=(TempFile&&) noexcept;
  ~TempFile();

  int fd() const { return fd_.get(); }
  bool is_partial() const { return keep_; }
  const std::string& temp_name() const { return temp_; }
  const std::string& shown() const { return shown_; }
  bool is_device() const { return device_; }
  /// Sets the file's size (for callers that did not write every byte).
  Status set_size(uint64_t size);
  /// Applies mode (permission bits 0777, or 07777 when `exact` — -p, whose
  /// bits fs/metadata.h preserved_bits() already decided; fchmod only if
  /// creation did not already give exactly these), optionally fsyncs, renames onto target.
  /// The caller has written the whole file: no truncation happens here.
  Status commit(unsigned mode, bool do_fsync, bool exact = false);
  /// commit() in two steps, for a caller that fsyncs the file itself in
  /// between (the sink's --fsync goes through io_uring, many files at once):
  /// set_bits() applies mode as commit() does, publish() renames (or links)
  /// onto target and closes. Not for a device (commit() fsyncs that).
  Status set_bits(unsigned mode, bool exact);
  Status publish();
  /// Removes the temp file now (also done by the destructor) — but a
  /// --partial file is only closed, kept for the next run.
  void discard();
  /// Removes it now, a --partial file too (it is no longer needed).
  void remove() {
    keep_ = false;
    discard();
  }

 private:
  int dir_fd_ = -1;  // borrowed: the Destination owns it and outlives this file
  Fd fd_;
  std::string temp_, target_, shown_;
  unsigned created_mode_ = 0;  // permission bits the file was created with, or ~0u if unknown
  bool committed_ = false;
  bool device_ = false;  // written in place: nothing to rename or unlink
  bool keep_ = false;  // a --partial file: discard() closes it and leaves it
  bool unnamed_ = false;  // O_TMPFILE: linked to target_ at commit(); temp_ is empty
  Status link_into_place();
};

}  // namespace rcp
