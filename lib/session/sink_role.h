/// The sink role's one class, shared by the files that make it (not for use
/// elsewhere: session/sink.h is the interface). sink.cc: the messages a
/// source sends, each checked; sink_whole.cc: a SMALL_FILE; sink_chunks.cc: a chunk's way from READ to
/// disk (hash, verify, write) and the loop's pump; sink_commit.cc: a
/// complete entry checked and put in place, its FILE_RESULT; sink_xattr.cc:
/// -X/-A. One thread runs it all (session/loop.h).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <fmt/core.h>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <variant>

#include "fs/destination.h"
#include "fs/filetime.h"
#include "fs/itemize.h"
#include "fs/metadata.h"
#include "fs/path.h"
#include "fs/sparse.h"
#include "fs/xattr.h"
#include "hash/hash_pool.h"
#include "io/direct.h"
#include "io/ring.h"
#include "io/write_inline.h"
#include "session/channel.h"
#include "session/delta.h"
#include "session/ledger.h"
#include "session/loop.h"
#include "session/options.h"
#include "session/plan.h"
#include "session/small_file.h"
#include "session/pool.h"
#include "session/walk_totals.h"
#include "session/xattr_pieces.h"
#include "transport/backlog.h"
#include "util/log.h"
#include "util/overloaded.h"
#include "util/test_faults.h"

namespace rcp {

class Sink {
 public:
  // The Role session/loop.h's run_loop drives.
  Sink(Channel& ch, Ring& ring, Destination& dest, const SessionOptions& opt);
  Status init();
  bool finished() const { return done_sent_; }
  HashPool* hash_pool() const { return hp_.get(); }
  TransferStats& stats() { return stats_; }
  int pace_wait_ms() const { return pacer_.wait_ms(); }
  Status on_event(TransportEvent& e);                          // sink.cc
  Status on_io(uint64_t ud, int res);                          // sink_chunks.cc (and an fsync's: sink_commit.cc)
  Status on_hashed(uint64_t cookie, const wire::Digest& got);  // sink_chunks.cc
  Status pump(bool& started);                                  // sink_chunks.cc

 private:
  struct File {
    File(uint32_t id_, uint64_t size_, uint32_t mode_, Checksum algo)
        : id(id_), size(size_), mode(mode_), ledger(algo, size_) {}
    uint32_t id = 0;
    uint64_t size = 0;
    uint32_t mode = 0644;
    int64_t mtime_ns = 0;
    std::string shown;
    unsigned type = S_IFREG;  // S_IFMT bits of the entry
    bool is_dir = false;  // a directory entry: created at FILE_END
    bool skip = false;    // the destination has it already: STOP_FILE sent, chunks returned unread
    Fd basis;             // the file being replaced: chunks whose digests match are reused
    uint64_t basis_size = 0;
    uint64_t pulled = 0, matched = 0;
    uint64_t basis_matched = 0;  // of matched: taken from the old file (not a partial one)
    bool left_zeros = false;  // -S left blocks of zeros unwritten: the size is set before the rename
    uint64_t partial_size = 0;  // a kept --partial file being completed in place: its size when opened
    bool skip_device = false;  // a device a non-root receiver does not create (rsync skips them silently)
    bool dry_write = false;    // dry run: the update rules would write this file
    OldEntry old;              // what stood at the destination (for -i)
    EntryMeta meta;       // what the source said about it
    int dir_fd = -1;      // a symlink or special: its directory (borrowed from parent or the destination)
    std::string leaf;     // ... and its name there
    std::string name;     // as sent (a hard-link leader's is kept)
    uint32_t link_to = 0;  // -H: itself (a group's first) or the group's first
    bool waiting = false;  // a hard link whose first file is not committed yet
    std::string rel;      // its path below the destination
    std::shared_ptr<Fd> parent;  // the file's directory when below the destination (outlives tmp)
    TempFile tmp;
    DirectFile direct;  // O_DIRECT twin of tmp's fd (--direct), for whole granules
    FileLedger ledger;
    uint64_t written = 0;
    uint64_t counted = 0;  // of its bytes, counted in progress_bytes_ so far
    bool touched = false;  // a write was submitted (a device keeps what reached it)
    uint32_t chunks_active = 0;
    int inline_writes = -1;  // io/write_inline.h; -1: not asked yet
    bool end_seen = false;
    bool syncing = false;  // --fsync: its fsync is in flight; on_fsynced() puts it in place
    bool failed = false;
    std::string error;
    wire::Digest expected;
    std::unique_ptr<XattrAssembler> xa;  // -X/-A: its xattrs as their pieces arrive
    std::vector<Xattr> xattrs;           // ... the complete ones this sink sets
    uint64_t xattr_bytes = 0;            // their names and values (in xattr_buffered_)
    uint16_t xattr_bits = 0;             // -i: kChangeAcl/kChangeXattr against what stood there
  };
  struct Pending {
    wire::ChunkReady c;
    std::vector<uint32_t> blocks;
    int attempts = 0;
    uint32_t writes_out = 0;
  };
  struct Write {
    uint64_t cookie;
    uint32_t block;
    uint64_t file_off;
    uint32_t buf_off;
    uint32_t len;
  };

  // sink.cc: each message a source sends, checked before it is acted on.
  Status on_message(wire::Message& m);
  Status handle(wire::FileBegin& fb);
  Status handle(wire::WalkTotals& x);
  Status handle(wire::FileSkipped& x);
  Status handle(wire::ChunkReady& c);
  Status handle(wire::Hole& h);
  Status handle(wire::FileEnd& fe);
  Status handle(wire::SmallFile& m);  // sink_whole.cc
  Status on_finish() {
    finish_seen_ = true;
    return {};
  }
  template <typename M>
  Status unexpected(const M&) {
    return proto_error(t_, fmt::format("unexpected {}", wire::MsgTraits<M>::name));
  }

  // sink_chunks.cc: a chunk pulled, verified and written.
  Status post_read(uint64_t cookie, Pending& p);
  Status on_read_done(TransportEvent& e);
  Status chunk_written(uint64_t cookie);
  void submit_write(File& f, const Write& w);
  void submit_one(File& f, const Write& w, int fd);
  bool writes_inline(const File& f);
  void finish_chunk(uint64_t cookie);
  /// 4096: the block of ext4, XFS and tmpfs; a smaller run of zeros could
  /// not be left unallocated anyway.
  static constexpr uint32_t kHoleGranule = 4096;
  /// With -S, blocks of zeros in a chunk are left as holes in a regular
  /// file, where the file is fresh: below a kept --partial file's old size
  /// the old bytes are there, so zeros are written.
  bool zeros_become_holes(const File& f, uint64_t file_off) const {
    return opt_.preserve.sparse && !f.tmp.is_device() && file_off >= f.partial_size;
  }
  void give_back(uint32_t slot) {
    lent_[slot] = false;
    done_slots_.push_back(slot);
  }
  void fail_file(File& f, std::string why) {
    if (f.failed) return;
    f.failed = true;
    f.error = std::move(why);
  }

  // sink_commit.cc: a complete entry checked, put in place, reported.
  Status check_file(uint32_t id);
  Status finish_file(File& f, bool kept, bool follower);
  uint16_t changes_of(const File& f, bool data, bool follower) const;
  uint16_t changes_of(const OldEntry& old, unsigned type, uint64_t size, const EntryMeta& meta, bool data,
                      bool follower) const;
  Status commit(File& f);
  Status commit_file(File& f);
  Status on_fsynced(std::unordered_map<uint64_t, uint32_t>::iterator sy, int res);
  void submit_parked_fsyncs();
  /// --fsync: fsyncs queued on the ring at once. io-wq runs up to 4 x CPUs of
  /// them and each holds its file open until it completes: with a disk
  /// slower than the network (an HDD: ~100 fsyncs a second) files would pile
  /// up open until the process ran out of descriptors (1,024 by default;
  /// kMaxFilesOpen, 256, more may be open receiving). 128: 4 x CPUs of a
  /// 32-CPU host.
  static constexpr size_t kMaxFsyncsQueued = 128;
  void keep_meta(File& f);
  void fix_dirs();
  void prune();
  /// The first file of a hard-link group (-H): where it is, and the links waiting for it.
  struct Leader {
    std::string name;
    enum State { pending, ok, failed } state = pending;
    std::vector<uint32_t> waiting;
  };
  struct DirFix {
    std::string rel, shown;
    EntryMeta meta;
    std::vector<Xattr> acl;  // -A: its system.posix_acl_access (none or one)
  };

  // sink_xattr.cc: -X/-A.
  Status handle(wire::XattrPiece& x);
  Fd open_existing(const File& f) const;
  void xattrs_before(File& f);
  void update_kept_xattrs(File& f);
  Status set_xattrs(File& f, int fd);
  Status dir_xattrs(File& f, std::vector<Xattr>& acl);
  void xattr_failed(const std::string& shown, const Error& e);

  Channel& ch_;
  Transport& t_;
  Ring& ring_;
  const SessionOptions& opt_;
  Pool pool_;
  std::unique_ptr<HashPool> hp_;  // after pool_: its workers stop before the pool goes
  IndexPool free_;
  ChunkReuse reuse_;
  Destination& dest_;
  std::vector<DirFix> dirs_;  // directories received, fixed up at the end (-p -t -o -g)
  std::unordered_map<uint32_t, Leader> leaders_;  // -H: by file id
  DestinationTree tree_;  // before files_: its directories outlive their temp files
  std::optional<Pruner> pruner_;  // --delete
  std::map<uint32_t, File> files_;
  std::deque<wire::ChunkReady> queue_;
  std::vector<std::pair<uint64_t, int>> written_inline_;  // (write id, pwrite's result or -errno), for pump()
  bool inline_asked_ = false, inline_top_ = false, inline_answer_ = false;  // writes_inline()'s last answer ...
  std::weak_ptr<Fd> inline_dir_;                                            // ... and its directory
  std::deque<wire::EntryDeleted> deleted_;  // --delete's removals, sent before DONE
  bool pruned_ = false;                     // every file is in; pruned (--delete) and directories fixed
  std::unordered_map<uint64_t, Pending> pending_;
  std::unordered_map<uint64_t, Write> writes_;
  std::unordered_map<uint64_t, uint32_t> fsyncs_;  // --fsync in flight: ring id -> file id
  std::vector<std::pair<uint64_t, int>> parked_fsyncs_;  // (ring id, fd): RCP_TEST_FAULT fsync-park
  int64_t fsync_seq_ = 0;                          // fsyncs completed (RCP_TEST_FAULT fsync-fail)
  std::vector<uint32_t> done_slots_;
  uint64_t next_cookie_ = 1;
  uint64_t next_write_ = 1;
  uint32_t next_file_id_ = 0;
  uint32_t unended_ = 0;  // FILE_BEGIN seen, FILE_END not yet: each may hold a temp file
  std::vector<bool> lent_ = std::vector<bool>(kMaxSlots);  // source slots announced, not yet returned
  int64_t read_seq_ = 0;
  bool finish_seen_ = false;
  bool direct_noted_ = false;  // the O_DIRECT fallback was logged (once per session)
  bool done_sent_ = false;
  XattrScope xarrive_, xscope_;  // -X/-A: what may arrive, what this sink sets
  uint64_t xattr_buffered_ = 0;  // xattr bytes held for entries not yet committed
  uint64_t dir_acls_held_ = 0;   // directories' access ACLs held for fix_dirs
  bool xattr_noted_ = false;     // a file system without xattrs was told once
  uint64_t progress_bytes_ = 0;
  WalkTotalsCheck totals_;
  Pacer pacer_{opt_};
  TransferStats stats_;
};

}  // namespace rcp
