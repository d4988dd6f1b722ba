#include "session/sink.h"

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
#include "session/delta.h"
#include "session/ledger.h"
#include "session/loop.h"
#include "session/plan.h"
#include "session/pool.h"
#include "session/walk_totals.h"
#include "session/xattr_pieces.h"
#include "transport/backlog.h"
#include "util/log.h"
#include "util/overloaded.h"
#include "util/test_faults.h"

namespace rcp {
namespace {

static_assert(kChangeKnown == wire::kResultChangesKnown, "FILE_RESULT carries fs/itemize.h's bits");
static_assert(Preserve::kKnown == wire::kPreserveKnown, "OPEN carries fs/metadata.h's Preserve bits");

/// -X/-A: xattr bytes (names and values) a sink holds for entries begun and
/// not yet committed. XattrTally bounds one entry to 1 MiB; a source may
/// have kMaxFilesOpen (256) entries begun, so without this a lying one
/// could make a sink hold 256 MiB. 64 entries of the largest size; an
/// honest source has about slots + 1 (17) files open, most with a few
/// short xattrs.
constexpr uint64_t kMaxXattrBuffered = 64u << 20;
/// Directories' access ACLs (-A) held until fix_dirs sets them with the
/// bits: an honest one is tens of bytes (a 1,000,000-directory tree with
/// one named user each: 44 MB); past this a directory's is set when it is
/// made (its contents are then created under the ACL's bits already).
constexpr uint64_t kMaxDirAclsHeld = 64u << 20;

class Sink {
 public:
  Sink(Channel& ch, Ring& ring, Destination& dest, const SessionOptions& opt)
      : ch_(ch), t_(ch.transport()), ring_(ring), opt_(opt),
        pool_(t_, opt.blocks, opt.block_size), free_(opt.blocks), dest_(dest), tree_(dest, opt.preserve) {
    // What a source may send (trusted.*/security.* too: a root source reads
    // them) and what this sink sets: those only as root, and never from a
    // pushing client (a file capability is as much a privilege as setuid).
    xarrive_ = XattrScope{opt.preserve.xattrs, opt.preserve.acls, true};
    xscope_ = XattrScope{opt.preserve.xattrs, opt.preserve.acls, running_as_root() && opt.preserve.trusted_sender};
    if (dest.prune && dest.is_dir && dest.dir.valid()) {
      PruneOptions po = *dest.prune;
      po.dry_run = opt.rules.dry_run;
      pruner_.emplace(dest.dir.get(), std::move(po));
      // Listed here (a pull) and reported to the source (a push), in order.
      pruner_->on_delete([this](const std::string& rel, bool is_dir) {
        if (opt_.on_item) opt_.on_item(rel, is_dir ? S_IFDIR : 0, 0, true);
        deleted_.push_back(wire::EntryDeleted{rel, static_cast<uint8_t>(is_dir)});
      });
    }
  }

  Status init() {
    RCP_TRY(pool_.init(ring_, false));
    return start_hash_pool(opt_, hp_);
  }
  bool finished() const { return done_sent_; }
  HashPool* hash_pool() const { return hp_.get(); }

  TransferStats& stats() { return stats_; }
  int pace_wait_ms() const { return pacer_.wait_ms(); }

  Status on_event(TransportEvent& e) {
    if (e.kind == TransportEvent::Kind::read_done) return on_read_done(e);
    RCP_ASSIGN(wire::Message m, message_of(t_, e));
    return on_message(m);
  }

  /// One handler per wire message, and no generic one: a message added to
  /// wire::Message does not compile until it is handled (or refused) here.
  Status on_message(wire::Message& m) {
    return std::visit(overloaded{
                          [&](wire::FileBegin& x) { return handle(x); },
                          [&](wire::ChunkReady& x) { return handle(x); },
                          [&](wire::FileEnd& x) { return handle(x); },
                          [&](wire::Finish&) { return on_finish(); },
                          [&](wire::FileSkipped& x) { return handle(x); },
                          [&](wire::WalkTotals& x) { return handle(x); },
                          [&](wire::Hole& x) { return handle(x); },
                          [&](wire::XattrPiece& x) { return handle(x); },
                          [&](wire::ErrorMsg& e) -> Status { return make_error(e.err, t_.peer() + ": " + e.message); },
                          // What only a sink sends, or only comes before the session:
                          [&](wire::Open& x) { return unexpected(x); },
                          [&](wire::OpenOk& x) { return unexpected(x); },
                          [&](wire::ChunkDone& x) { return unexpected(x); },
                          [&](wire::FileResult& x) { return unexpected(x); },
                          [&](wire::Done& x) { return unexpected(x); },
                          [&](wire::ModuleList& x) { return unexpected(x); },
                          [&](wire::StopFile& x) { return unexpected(x); },
                          [&](wire::EntryDeleted& x) { return unexpected(x); },
                      },
                      m);
  }

  Status on_io(uint64_t ud, int res) {
    if (auto sy = fsyncs_.find(ud); sy != fsyncs_.end()) return on_fsynced(sy, res);
    auto wit = writes_.find(ud);
    if (wit == writes_.end()) return make_error(EIO, "internal: unknown write completion");
    Write w = wit->second;
    writes_.erase(wit);
    Pending& p = pending_.at(w.cookie);
    File& f = files_.at(p.c.file_id);
    if (res < 0 && !f.failed) fail_file(f, make_error(-res, "write '" + f.shown + "'").message());
    if (res > 0 && static_cast<uint32_t>(res) < w.len && !f.failed) {  // short write: the rest
      Write rest{w.cookie, w.block, w.file_off + static_cast<uint32_t>(res), w.buf_off + static_cast<uint32_t>(res),
                 w.len - static_cast<uint32_t>(res)};
      submit_write(f, rest);
      return {};
    }
    if (res == 0 && !f.failed) fail_file(f, "write '" + f.shown + "': no progress");
    if (--p.writes_out == 0) return chunk_written(w.cookie);
    return {};
  }

  /// Every write of a chunk completed (or it needed none: -S, all zeros).
  Status chunk_written(uint64_t cookie) {
    Pending& p = pending_.at(cookie);
    File& f = files_.at(p.c.file_id);
    if (!f.failed) f.written += p.c.length;
    progress_bytes_ += p.c.length;
    f.counted += p.c.length;
    if (opt_.on_progress) opt_.on_progress(progress_bytes_, stats_.files_ok + stats_.files_failed, f.shown);
    finish_chunk(cookie);
    return check_file(f.id);
  }

  Status pump(bool& started) {
    // Writes done inline by submit_one() (a short one's rest may add more).
    while (!written_inline_.empty()) {
      std::vector<std::pair<uint64_t, int>> done;
      done.swap(written_inline_);
      for (auto [id, res] : done) RCP_TRY(on_io(id, res));
      started = true;
    }
    while (!queue_.empty()) {
      wire::ChunkReady& c = queue_.front();
      File& f = files_.at(c.file_id);
      if (f.failed || f.skip) {  // returned unread
        give_back(c.slot);
        queue_.pop_front();
        --f.chunks_active;
        RCP_TRY(check_file(f.id));
        continue;
      }
      if (f.partial_size > 0 || f.basis.valid()) {
        // A partial file's own chunks first (in place), then the old file's (copied).
        Result<bool> same = false;
        if (f.partial_size > 0)
          same = reuse_.try_reuse(opt_, f.tmp.fd(), f.partial_size, -1, f.id, c.offset, c.length, c.digest);
        if (same.ok() && !same.value() && f.basis.valid()) {
          same = reuse_.try_reuse(opt_, f.basis.get(), f.basis_size, f.tmp.fd(), f.id, c.offset, c.length, c.digest);
          if (same.ok() && same.value()) f.basis_matched += c.length;
        }
        if (!same.ok()) fail_file(f, same.error().context + " '" + f.shown + "': " + same.error().message());
        if (!same.ok() || same.value()) {
          if (same.ok()) {
            f.ledger.add_digest(c.offset, c.length, c.digest);
            f.written += c.length;
            f.matched += c.length;
            progress_bytes_ += c.length;
            f.counted += c.length;
          }
          give_back(c.slot);
          queue_.pop_front();
          --f.chunks_active;
          RCP_TRY(check_file(f.id));
          started = true;
          continue;
        }
      }
      const uint32_t nblocks = blocks_for(c.length, opt_.block_size);
      const uint32_t nwrs = (nblocks + t_.negotiated().max_sge - 1) / t_.negotiated().max_sge;
      if (free_.available() < nblocks || t_.read_capacity() < nwrs) break;
      if (!pacer_.take(c.length)) break;  // --bwlimit: the reads wait (pace_wait_ms)
      Pending p;
      p.c = std::move(c);
      queue_.pop_front();
      free_.take(nblocks, p.blocks);
      // Ascending order turns adjacent free blocks into one contiguous run,
      // which is then written with one WRITE_FIXED instead of one per block.
      std::sort(p.blocks.begin(), p.blocks.end());
      const uint64_t cookie = next_cookie_++;
      auto [it, ok] = pending_.emplace(cookie, std::move(p));
      RCP_TRY(post_read(cookie, it->second));
      started = true;
    }
    if (finish_seen_ && files_.empty() && !pruned_) {
      if (pruner_) prune();
      fix_dirs();  // (after pruning: deleting an entry changes its directory's mtime)
      pruned_ = true;
      started = true;
    }
    // --delete's removals are this side's own bulk (a million entries, a
    // million messages): queued only while the peer keeps up with what it
    // was sent (transport/backlog.h), the rest on later turns, DONE last.
    for (; !deleted_.empty() && t_.unsent_bytes() < kUnsentSoft; deleted_.pop_front()) {
      RCP_TRY(ch_.send(deleted_.front()));
      started = true;
    }
    while (!done_slots_.empty()) {
      wire::ChunkDone d;
      size_t n = std::min(done_slots_.size(), wire::kMaxDoneBatch);
      d.slots.assign(done_slots_.begin(), done_slots_.begin() + static_cast<long>(n));
      done_slots_.erase(done_slots_.begin(), done_slots_.begin() + static_cast<long>(n));
      RCP_TRY(ch_.send(d));
      started = true;
    }
    if (pruned_ && deleted_.empty() && !done_sent_) {
      RCP_TRY(ch_.send(wire::Done{stats_.files_ok, stats_.files_failed, stats_.files_deleted}));
      done_sent_ = true;
      started = true;
    }
    return {};
  }

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

  Status handle(wire::FileBegin& fb) {
    if (finish_seen_) return proto_error(t_, "FILE_BEGIN after FINISH");
    if (files_.count(fb.file_id) || fb.file_id < next_file_id_) return proto_error(t_, "file id reused");
    next_file_id_ = fb.file_id + 1;
    if (Status st = totals_.begin(fb.size); !st.ok()) return proto_error(t_, st.error().context);
    if (unended_ >= kMaxFilesOpen)
      return proto_error(t_, fmt::format("more than {} files begun and not ended", kMaxFilesOpen));
    File f(fb.file_id, fb.size, fb.mode, opt_.checksum);
    f.type = (fb.mode & S_IFMT) ? (fb.mode & S_IFMT) : S_IFREG;  // (the decoder admits known types only)
    f.is_dir = f.type == S_IFDIR;
    f.mtime_ns = fb.mtime_ns;
    f.meta = EntryMeta{fb.mode, fb.mtime_ns, fb.uid, fb.gid, fb.user, fb.group, fb.link_target, fb.rdev};
    f.link_to = fb.link_to;
    f.name = fb.name;
    const bool follower = fb.link_to != 0 && fb.link_to != fb.file_id;
    PlacedEntry e = tree_.place(fb.name, f.type, f.mode, t_.peer(), IncomingFile{fb.size, fb.mtime_ns, &opt_.rules},
                                follower);
    // (A directory entry carries no data: the decoder admits a size on
    // regular files only, wire/messages.cc.)
    f.mode = e.mode;
    f.shown = std::move(e.shown);
    f.rel = std::move(e.rel);
    f.parent = std::move(e.parent);
    f.tmp = std::move(e.tmp);
    f.dir_fd = e.dir_fd;
    f.leaf = std::move(e.leaf);
    f.failed = !e.error.empty();
    f.old = std::move(e.old);
    f.dry_write = e.dry_write;
    // Every name sent is kept from deletion; only a directory that was
    // accepted (asked for, placed) is pruned.
    if (pruner_) pruner_->saw(fb.name, f.is_dir && !f.failed);
    f.error = std::move(e.error);
    if (opt_.direct && !f.failed && !f.is_dir && f.size > 0 && f.tmp.fd() >= 0)
      f.direct = direct_or_buffered(f.tmp.fd(), O_WRONLY, f.shown, direct_noted_);
    f.skip = e.skip && !f.failed;
    // A dry run changes nothing: every entry is "kept", its chunks returned
    // unread (check_file tells the source which files would be written).
    const bool dry = opt_.rules.dry_run;
    if (dry) f.skip = !f.failed;
    if (can_reuse_chunks(opt_) && !dry) {
      f.basis = std::move(e.basis);
      f.basis_size = e.basis_size;
      struct stat ps;
      if (f.tmp.is_partial() && ::fstat(f.tmp.fd(), &ps) == 0) f.partial_size = static_cast<uint64_t>(ps.st_size);
      // --partial onto a device (written in place, no temp file): what an
      // interrupted run left there is the partial copy. Every chunk is read
      // back and kept only when its digest matches (a device holds at least
      // the file: place_on_device refuses a smaller one), so a rerun moves
      // only what is missing or different.
      if (f.tmp.is_device() && opt_.rules.partial) f.partial_size = f.size;
    }
    // Only the kinds this copy asked for: a source cannot plant a symlink or
    // a device in a copy made without -l or -D.
    const Preserve& p = opt_.preserve;
    const bool device = f.type == S_IFCHR || f.type == S_IFBLK, special = f.type == S_IFIFO || f.type == S_IFSOCK;
    if (!f.failed && ((f.type == S_IFLNK && !p.links) || (device && !(p.devices && p.trusted_sender)) || (special && !p.specials)))
      fail_file(f, fmt::format("refused {} '{}' from {}: not asked for ({})", f.type == S_IFLNK ? "symlink" : "special file",
                               fb.name, t_.peer(), f.type == S_IFLNK ? "-l" : "-D"));
    f.skip_device = !f.failed && device && !running_as_root();
    if (!f.failed && fb.link_to != 0 && !p.hard_links)
      fail_file(f, fmt::format("refused hard link '{}' from {}: not asked for (-H)", fb.name, t_.peer()));
    if (fb.link_to == fb.file_id && p.hard_links) {
      // Bounded by the files with several links the source sends; their names only.
      if (leaders_.size() >= opt_.max_link_groups)
        return proto_error(t_, fmt::format("more than {} hard-link groups", opt_.max_link_groups));
      leaders_[fb.file_id] = Leader{fb.name, Leader::pending, {}};
    }
    files_.emplace(fb.file_id, std::move(f));
    ++unended_;
    if (e.skip || (dry && !f.is_dir && fb.size > 0)) return ch_.send(wire::StopFile{fb.file_id});
    return {};
  }

  Status handle(wire::WalkTotals& x) {
    if (finish_seen_) return proto_error(t_, "WALK_TOTALS after FINISH");
    if (Status st = totals_.announce(x); !st.ok()) return proto_error(t_, st.error().context);
    if (opt_.on_totals) opt_.on_totals(x.files, x.bytes, x.final != 0);
    return {};
  }

  Status handle(wire::FileSkipped& x) {
    if (finish_seen_) return proto_error(t_, "FILE_SKIPPED after FINISH");
    if (x.err == 0) {  // a notice: skipped by design (a symlink or special file in a tree)
      log_warning("{}", x.message);
      return {};
    }
    if (Status st = totals_.begin(0); !st.ok()) return proto_error(t_, st.error().context);
    ++stats_.files_failed;
    if (x.vanished) ++stats_.files_vanished;
    stats_.note_error(fmt::format("{} (not sent by {})", x.message, t_.peer()));
    if (pruner_) pruner_->source_error();
    return {};
  }

  Status handle(wire::ChunkReady& c) {
    auto it = files_.find(c.file_id);
    if (it == files_.end()) return proto_error(t_, fmt::format("chunk for unknown file {}", c.file_id));
    File& f = it->second;
    if (f.end_seen) return proto_error(t_, "chunk after FILE_END");
    if (c.length > opt_.chunk_size || blocks_for(c.length, opt_.block_size) > free_.capacity())
      return proto_error(t_, fmt::format("chunk of {} bytes exceeds the agreed {}", c.length, opt_.chunk_size));
    if (!f.ledger.claim(c.offset, c.length))
      return proto_error(t_, fmt::format("chunk [{}, +{}) overlaps another or lies outside '{}' ({} bytes)", c.offset,
                                         c.length, f.shown, f.size));
    if (c.digest.len != chunk_digest_len(opt_)) return proto_error(t_, "chunk digest has the wrong length");
    // Each chunk names a slot of the source's pool not already lent: what a
    // sink queues is bounded by kMaxSlots, whatever a source announces.
    if (c.slot >= kMaxSlots || lent_[c.slot])
      return proto_error(t_, fmt::format("chunk in slot {}, which is {}", c.slot,
                                         c.slot >= kMaxSlots ? "out of range" : "already lent"));
    lent_[c.slot] = true;
    ++f.chunks_active;
    queue_.push_back(std::move(c));
    return {};
  }

  /// A range the source found no data in: zeros, made here (fs/sparse.h
  /// HoleFill says how), never pulled.
  Status handle(wire::Hole& h) {
    auto it = files_.find(h.file_id);
    if (it == files_.end()) return proto_error(t_, fmt::format("HOLE for unknown file {}", h.file_id));
    File& f = it->second;
    if (f.end_seen) return proto_error(t_, "HOLE after FILE_END");
    if (!f.ledger.claim(h.offset, h.length))
      return proto_error(t_, fmt::format("hole [{}, +{}) overlaps another range or lies outside '{}' ({} bytes)",
                                         h.offset, h.length, f.shown, f.size));
    if (!f.failed && !f.skip) {
      const bool device = f.tmp.is_device();
      const HoleFill how = device ? (opt_.preserve.discard ? HoleFill::discard : HoleFill::zero)
                                  : (opt_.preserve.sparse ? HoleFill::leave : HoleFill::allocate);
      Status st;
      // A hole at the end: the file gets its size here (nothing is written there).
      if (!device && h.offset + h.length == f.size) st = f.tmp.set_size(f.size);
      if (st.ok()) st = fill_hole(f.tmp.fd(), h.offset, h.length, how, f.partial_size > h.offset);
      if (!st.ok()) fail_file(f, fmt::format("{} of '{}': {}", st.error().context, f.shown, st.error().message()));
      f.touched = f.touched || device;
      if (!f.failed) f.written += h.length;
      // A hole where the old file has one too is content found equal: an
      // unchanged sparse file is then kept (-c), not rebuilt from itself.
      if (!f.failed && f.basis.valid() && h.offset + h.length <= f.basis_size) {
        Result<DataExtent> d = find_data(f.basis.get(), h.offset, f.basis_size);
        if (d.ok() && d.value().begin >= h.offset + h.length) f.basis_matched += h.length;
      }
    }
    f.ledger.add_digest(h.offset, h.length, hole_digest(opt_, f.id, h.offset, h.length));
    progress_bytes_ += h.length;
    f.counted += h.length;
    if (opt_.on_progress) opt_.on_progress(progress_bytes_, stats_.files_ok + stats_.files_failed, f.shown);
    return {};
  }

  /// A piece of one of an entry's xattrs (-X/-A): put together, bounded
  /// (session/xattr_pieces.h), and kept until the entry is committed when
  /// this sink sets that name (a root source's trusted.* reaching a non-root
  /// sink is dropped quietly, as rsync does).
  Status handle(wire::XattrPiece& x) {
    auto it = files_.find(x.file_id);
    if (it == files_.end()) return proto_error(t_, fmt::format("XATTR for unknown file {}", x.file_id));
    File& f = it->second;
    if (f.end_seen) return proto_error(t_, fmt::format("XATTR after FILE_END of '{}'", f.shown));
    if (!opt_.preserve.xattrs && !opt_.preserve.acls)
      return proto_error(t_, fmt::format("XATTR for '{}' in a session without -X or -A", f.shown));
    if (f.link_to != 0 && f.link_to != f.id)
      return proto_error(t_, fmt::format("XATTR for the hard link '{}' (its group's first file carries them)", f.shown));
    if (!f.xa) f.xa = std::make_unique<XattrAssembler>(xarrive_);
    auto done = f.xa->add(x);
    if (!done.ok()) return proto_error(t_, fmt::format("'{}': {}", f.shown, done.error().context));
    if (!done->has_value() || !xattr_wanted((*done)->name, xscope_)) return {};
    const uint64_t n = (*done)->name.size() + (*done)->value.size();
    if (xattr_buffered_ + n > kMaxXattrBuffered)
      return proto_error(t_, fmt::format("'{}': more than {} bytes of xattrs held for entries not yet complete",
                                         f.shown, kMaxXattrBuffered));
    xattr_buffered_ += n;
    f.xattr_bytes += n;
    f.xattrs.push_back(std::move(**done));
    return {};
  }

  Status handle(wire::FileEnd& fe) {
    auto it = files_.find(fe.file_id);
    if (it == files_.end() || it->second.end_seen) return proto_error(t_, "FILE_END for an unknown file");
    File& f = it->second;
    if (fe.size != f.size) return proto_error(t_, "FILE_END size differs from FILE_BEGIN");
    if (f.xa && f.xa->in_progress())
      return proto_error(t_, fmt::format("FILE_END of '{}' with its xattr '{}' incomplete", f.shown, f.xa->pending_name()));
    f.end_seen = true;
    --unended_;
    f.expected = fe.digest;
    return check_file(f.id);
  }

  Status on_finish() {
    finish_seen_ = true;
    return {};
  }
  template <typename M>
  Status unexpected(const M&) {
    return proto_error(t_, fmt::format("unexpected {}", wire::MsgTraits<M>::name));
  }

  Status post_read(uint64_t cookie, Pending& p) {
    std::vector<uint64_t> addrs;
    addrs.reserve(p.blocks.size());
    for (uint32_t b : p.blocks) addrs.push_back(reinterpret_cast<uint64_t>(pool_.at(b)));
    auto wrs = plan_reads(p.c.addr, p.c.length, addrs, opt_.block_size, t_.negotiated().max_sge);
    ++p.attempts;
    return t_.read(cookie, p.c.rkey, wrs);
  }

  Status on_read_done(TransportEvent& e) {
    auto it = pending_.find(e.cookie);
    if (it == pending_.end()) return make_error(EIO, "internal: unknown read completion");
    Pending& p = it->second;
    File& f = files_.at(p.c.file_id);
    if (e.status != 0)
      return make_error(e.status, fmt::format("pulling '{}' at offset {} from {}: {}", f.shown, p.c.offset, t_.peer(), e.detail));
    f.pulled += p.c.length;
    if (opt_.checksum == Checksum::none && !opt_.chunk_key) return on_hashed(e.cookie, p.c.digest);
    if (read_seq_++ == test_faults().sink_corrupt_once && p.attempts == 1) pool_.at(p.blocks.front())[0] ^= 0x5a;
    HashPool::Job job{e.cookie, {}, p.c.file_id, p.c.offset};
    uint32_t left = p.c.length;
    for (uint32_t b : p.blocks) {
      uint32_t n = std::min(left, opt_.block_size);
      job.pieces.push_back({pool_.at(b), n});
      left -= n;
    }
    if (hp_ && p.c.length >= kOffloadMin) {
      hp_->submit(std::move(job));
      return {};
    }
    return on_hashed(e.cookie, chunk_digest(opt_, p.c.file_id, p.c.offset, job.pieces));
  }

 public:
  /// A pulled chunk was hashed: verify it, then write it or fetch it again.
  Status on_hashed(uint64_t cookie, const wire::Digest& got) {
    Pending& p = pending_.at(cookie);
    File& f = files_.at(p.c.file_id);
    {
      if (!chunk_digest_equal(opt_, got, p.c.digest)) {
        if (p.attempts < 2) {
          log_info("chunk at offset {} of '{}' failed verification; fetching it again", p.c.offset, f.shown);
          return post_read(cookie, p);
        }
        fail_file(f, fmt::format("chunk at offset {} failed {} verification twice (expected {}, got {})", p.c.offset,
                                 opt_.chunk_key ? "keyed (HMAC-SHA256)" : checksum_name(opt_.checksum),
                                 to_hex(p.c.digest), to_hex(got)));
      }
    }
    give_back(p.c.slot);  // the source may refill that slot now
    if (f.failed) {
      finish_chunk(cookie);
      return check_file(f.id);
    }
    f.ledger.add_digest(p.c.offset, p.c.length, p.c.digest);
    // One write per run of consecutive blocks (a run is contiguous memory).
    uint32_t left = p.c.length;
    size_t i = 0;
    while (i < p.blocks.size()) {
      size_t j = i + 1;
      while (pool_.spans_units() && j < p.blocks.size() && p.blocks[j] == p.blocks[j - 1] + 1) ++j;
      const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(left, uint64_t{j - i} * opt_.block_size));
      Write w{cookie, p.blocks[i], p.c.offset + uint64_t{i} * opt_.block_size, 0, n};
      if (zeros_become_holes(f, w.file_off)) {
        // -S: write around whole blocks of zeros; the file's size is set
        // before the rename, so a zero tail reads back too.
        for (const Span& s : nonzero_spans(pool_.at(w.block), w.file_off, w.len, kHoleGranule)) {
          ++p.writes_out;
          submit_write(f, Write{cookie, w.block, s.offset, static_cast<uint32_t>(s.offset - w.file_off), s.length});
        }
        f.left_zeros = f.left_zeros || f.size > 0;
      } else {
        ++p.writes_out;
        submit_write(f, w);
      }
      left -= n;
      i = j;
    }
    if (p.writes_out == 0) return chunk_written(cookie);  // nothing but zeros
    return {};
  }

 private:
  /// 4096: the block of ext4, XFS and tmpfs; a smaller run of zeros could
  /// not be left unallocated anyway.
  static constexpr uint32_t kHoleGranule = 4096;

  /// With -S, blocks of zeros in a chunk are left as holes in a regular
  /// file, where the file is fresh: below a kept --partial file's old size
  /// the old bytes are there, so zeros are written.
  bool zeros_become_holes(const File& f, uint64_t file_off) const {
    return opt_.preserve.sparse && !f.tmp.is_device() && file_off >= f.partial_size;
  }

  /// One write, or with O_DIRECT two: the whole granules from its start
  /// through the direct fd, the rest (a file's unaligned tail) buffered.
  /// Direct I/O thus only ever covers whole pages no buffered write touches.
  void submit_write(File& f, const Write& w) {
    const uint32_t head = f.direct.direct_part(w.file_off, pool_.at(w.block) + w.buf_off, w.len);
    if (head > 0 && head < w.len) {
      ++pending_.at(w.cookie).writes_out;  // the tail is one more write of this chunk
      submit_one(f, Write{w.cookie, w.block, w.file_off, w.buf_off, head}, f.direct.fd.get());
      submit_one(f, Write{w.cookie, w.block, w.file_off + head, w.buf_off + head, w.len - head}, f.tmp.fd());
      return;
    }
    submit_one(f, w, head > 0 ? f.direct.fd.get() : f.tmp.fd());
  }

  void submit_one(File& f, const Write& w, int fd) {
    const uint64_t id = next_write_++;
    writes_.emplace(id, w);
    f.touched = true;
    if (fd == f.tmp.fd()) {  // buffered (the O_DIRECT twin always goes through the ring)
      if (f.inline_writes < 0) f.inline_writes = writes_inline(f);
      if (f.inline_writes) {
        // Completed in pump(), not here: the caller still walks the chunk's
        // blocks. No NOP through the ring for it (an SQE and a CQE per
        // small file).
        const ssize_t r = ::pwrite(fd, pool_.at(w.block) + w.buf_off, w.len, static_cast<off_t>(w.file_off));
        written_inline_.push_back({id, r < 0 ? -errno : static_cast<int>(r)});
        return;
      }
    }
    while (!ring_.write_fixed(fd, pool_.at(w.block) + w.buf_off, w.len, w.file_off, pool_.buf_index(w.block), id))
      (void)ring_.submit();
  }

  /// write_inline() asked once per directory, not per file: a directory's
  /// files are on its file system (an fstatfs per file was 2 % of the
  /// daemon's time receiving 10,000 x 4 KiB files). f.parent null: the
  /// destination directory itself.
  bool writes_inline(const File& f) {
    const bool same = inline_asked_ && (f.parent ? !inline_dir_.expired() && inline_dir_.lock() == f.parent : inline_top_);
    if (same) return inline_answer_;
    inline_answer_ = write_inline(f.tmp.fd());
    inline_asked_ = true;
    inline_top_ = !f.parent;
    inline_dir_ = f.parent;
    return inline_answer_;
  }

  void finish_chunk(uint64_t cookie) {
    auto it = pending_.find(cookie);
    for (uint32_t b : it->second.blocks) free_.give(b);
    File& f = files_.at(it->second.c.file_id);
    --f.chunks_active;
    pending_.erase(it);
  }

  /// Every file is in: the directories still open are complete, and
  /// --delete-after's deletions are done now.
  void prune() {
    pruner_->finish();
    stats_.files_deleted = pruner_->deleted();
    for (const auto& e : pruner_->errors()) {
      ++stats_.files_failed;
      stats_.note_error(e);
    }
    stats_.files_failed += static_cast<uint32_t>(pruner_->errors_dropped());
    stats_.errors_dropped += pruner_->errors_dropped();
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

  Status check_file(uint32_t id) {
    File& f = files_.at(id);
    // (A file whose fsync is in flight is not checked again: nothing of it
    // may arrive after its FILE_END, and it is no hard link that waits.)
    if (!f.end_seen || f.chunks_active > 0) return {};
    if (f.link_to != 0 && f.link_to != f.id && !f.failed) {  // a hard link: its first file must be in place
      auto lt = leaders_.find(f.link_to);
      if (lt == leaders_.end()) {
        fail_file(f, fmt::format("hard link '{}' to a file not sent as one", f.shown));
      } else if (lt->second.state == Leader::pending) {
        if (!f.waiting) lt->second.waiting.push_back(f.id);
        f.waiting = true;
        return {};
      } else if (lt->second.state == Leader::failed) {
        fail_file(f, fmt::format("hard link '{}': the file it links to failed", f.shown));
      }
    }
    const bool follower = f.link_to != 0 && f.link_to != f.id;
    if (!f.failed && !follower) xattrs_before(f);
    // The destination's file stays as it is (a dry run: the rules skip it).
    bool kept = opt_.rules.dry_run ? (f.type == S_IFREG && !follower && !f.dry_write) : f.skip;
    if (!f.failed && f.skip && !opt_.rules.dry_run && f.type == S_IFREG && !follower) update_kept_xattrs(f);
    if (!f.failed && !f.skip) {
      if (f.written != f.size || !f.ledger.complete()) {
        fail_file(f, fmt::format("'{}' incomplete: {} of {} bytes", f.shown, f.written, f.size));
      } else if (wire::Digest d = f.ledger.file_digest(); !(d == f.expected)) {
        fail_file(f, fmt::format("'{}' file digest mismatch", f.shown));
      } else if (f.is_dir || f.type != S_IFREG || f.skip_device || (f.link_to != 0 && f.link_to != f.id)) {
        if (Status st = commit(f); !st.ok()) fail_file(f, st.error().message());
      } else if (f.basis.valid() && f.basis_matched == f.size && f.basis_size == f.size) {
        // Every chunk matched: the file is the same, keep it (as rsync -c
        // does) with the source's mtime, so the next quick check skips it.
        kept = true;
        f.tmp.remove();
        keep_meta(f);
      } else if (Status z = f.tmp.is_partial() || f.left_zeros ? f.tmp.set_size(f.size) : Status{}; !z.ok()) {
        fail_file(f, z.error().message());  // (a kept partial file may be longer than the file now)
      } else if (Status t = set_mtime_ns(f.tmp.fd(), f.mtime_ns); !t.ok()) {
        fail_file(f, fmt::format("{} of '{}': {}", t.error().context, f.shown, t.error().message()));
      } else if (Status st = commit_file(f); !st.ok()) {
        fail_file(f, st.error().message());
      } else if (f.syncing) {
        return {};
      }
    }
    return finish_file(f, kept, follower);
  }

  /// The end of an entry, in place or failed: its FILE_RESULT, the stats,
  /// and the hard links that waited for it.
  Status finish_file(File& f, bool kept, bool follower) {
    const uint32_t id = f.id;
    wire::FileResult r{id, 0, 0, f.pulled, f.matched, "", 0};
    stats_.bytes_pulled += f.pulled;
    stats_.bytes_matched += f.matched;
    if (f.failed) {
      // A device is written in place: what reached it stays there.
      if (f.tmp.is_device() && f.touched)
        f.error += fmt::format("; block device '{}' is left partially written", f.shown);
      f.tmp.discard();
      r.err = EIO;
      r.message = f.error;
      ++stats_.files_failed;
      // Not logged here: the stats carry it to rcp and rcpd, which print each once.
      stats_.note_error(fmt::format("{}: {}", f.shown, f.error));
    } else {
      ++stats_.files_ok;
      if (f.is_dir) ++stats_.dirs_ok;
      if (kept) ++stats_.files_skipped;
      r.skipped = kept ? 1 : 0;
      stats_.bytes += f.size;
      if (!f.skip_device) r.changes = changes_of(f, !kept && f.type == S_IFREG && !follower, follower) | f.xattr_bits;
      if (r.changes && opt_.on_item) opt_.on_item(f.name, f.type, r.changes, false);
    }
    // The rest of a skipped or failed file is done too: the progress line's
    // bytes reach the announced total.
    progress_bytes_ += f.size - std::min(f.counted, f.size);
    if (opt_.on_progress) opt_.on_progress(progress_bytes_, stats_.files_ok + stats_.files_failed, {});
    const bool leader = f.link_to == id;
    xattr_buffered_ -= f.xattr_bytes;
    files_.erase(id);
    RCP_TRY(ch_.send(r));
    if (auto lt = leaders_.find(id); leader && lt != leaders_.end()) {
      lt->second.state = r.err == 0 ? Leader::ok : Leader::failed;
      const std::vector<uint32_t> waiting = std::move(lt->second.waiting);
      for (uint32_t w : waiting)
        if (files_.count(w)) RCP_TRY(check_file(w));
    }
    return {};
  }

  /// What this entry changes at the destination (fs/itemize.h), decided from
  /// what stood there when it began: its owner and group as they will be
  /// (mapped; the owner only where it is applied, as root).
  uint16_t changes_of(const File& f, bool data, bool follower) const {
    EntryMeta in = f.meta;
    Preserve p = opt_.preserve;
    p.owner = p.owner && running_as_root();
    if (p.owner) in.uid = map_uid(in.user, in.uid, p.numeric_ids);
    if (p.group) in.gid = map_gid(in.group, in.gid, p.numeric_ids);
    return item_changes(f.old, f.type, f.size, in, p, data, opt_.rules.checksum, follower);
  }

  /// The entry is complete and verified: puts it in place with its metadata.
  Status commit(File& f) {
    const Preserve& p = opt_.preserve;
    if (f.is_dir) {
      // With -p the directory is made writable for its contents; its own
      // bits, like its mtime, are set once everything in it is (fix_dirs).
      RCP_TRY(tree_.make_dir(f.rel, p.perms ? (f.mode | 0700) : f.mode, f.shown));
      DirFix fix{f.rel, f.shown, f.meta, {}};
      if (p.xattrs || p.acls) RCP_TRY(dir_xattrs(f, fix.acl));  // (the access ACL sets bits: with them, at fix_dirs)
      if (p.perms || p.times || p.owner || p.group || !fix.acl.empty()) dirs_.push_back(std::move(fix));
      return {};
    }
    if (f.link_to != 0 && f.link_to != f.id) {
      const Leader& l = leaders_.at(f.link_to);
      RCP_ASSIGN(auto from, tree_.parent_of(l.name));
      return make_hardlink(from->get(), base_name(l.name), f.dir_fd, f.leaf, f.shown);
    }
    if (f.skip_device) {
      log_info("skipping device '{}': only root creates devices", f.shown);
      return {};
    }
    if (f.type == S_IFLNK) {
      RCP_TRY(make_symlink(f.dir_fd, f.leaf, f.meta.link_target, f.shown));
      return apply_entry_meta(f.dir_fd, f.leaf, f.meta, p, f.shown);
    }
    // (A regular file goes through commit_file().)
    RCP_TRY(make_special(f.dir_fd, f.leaf, f.meta.mode, f.meta.rdev, f.shown));
    return apply_entry_meta(f.dir_fd, f.leaf, f.meta, p, f.shown);
  }

  /// A regular file, complete and verified, into place. Owner first (chown
  /// clears setuid), then the bits; the mtime was set last of all writes.
  /// With --fsync the fsync goes through the ring, and on_fsynced() puts the
  /// file in place: io_uring runs several at once on its workers, where one
  /// at a time on this thread held every file behind each disk flush (ext4
  /// here: 4,000 files/s in turn, 9,000 four at a time; bench/README.md).
  Status commit_file(File& f) {
    const Preserve& p = opt_.preserve;
    RCP_TRY(apply_fd_meta(f.tmp.fd(), f.meta, p, -1, f.shown));
    // xattrs after the owner (a chown clears security.capability), before
    // the bits (which set an ACL's mask as the source's group bits are).
    if ((p.xattrs || p.acls) && !f.tmp.is_device()) RCP_TRY(set_xattrs(f, f.tmp.fd()));
    // (written == size and the ledger is complete, so the temp file holds
    // exactly the file: commit() need not truncate.)
    if (!opt_.fsync || f.tmp.is_device()) return f.tmp.commit(f.mode, opt_.fsync, p.perms);
    RCP_TRY(f.tmp.set_bits(f.mode, p.perms));
    const uint64_t id = next_write_++;
    while (!ring_.fsync(f.tmp.fd(), id)) (void)ring_.submit();
    fsyncs_.emplace(id, f.id);
    f.syncing = true;
    return {};
  }

  /// A file's --fsync completed: in place now, or failed (nothing of it
  /// appears), then finished like any other.
  Status on_fsynced(std::unordered_map<uint64_t, uint32_t>::iterator sy, int res) {
    File& f = files_.at(sy->second);
    fsyncs_.erase(sy);
    f.syncing = false;
    if (fsync_seq_++ == test_faults().fsync_fail) res = -EIO;
    if (res < 0)
      fail_file(f, make_error(-res, "fsync '" + f.shown + "'").message());
    else if (Status st = f.tmp.publish(); !st.ok())
      fail_file(f, st.error().message());
    return finish_file(f, false, false);
  }

  /// A file kept as it is (every chunk matched): the source's mtime, and
  /// with -p/-o/-g its bits and owner, as rsync updates an unchanged file.
  /// Best effort: the content is right anyway.
  void keep_meta(File& f) {
    const Preserve& p = opt_.preserve;
    const int bits =
        p.perms ? static_cast<int>(preserved_bits(f.meta.mode, false, running_as_root() && p.trusted_sender)) : -1;
    if (p.xattrs || p.acls) (void)set_xattrs(f, f.basis.get());
    if (p.perms || p.owner || p.group) (void)apply_fd_meta(f.basis.get(), f.meta, p, bits, f.shown);
    (void)set_mtime_ns(f.basis.get(), f.mtime_ns);
  }

  /// After every entry of the session: each directory received gets its
  /// owner, bits and mtime (creating its contents changed its mtime).
  void fix_dirs() {
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
      auto fd = open_beneath(dest_.dir.get(), it->rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      for (const Xattr& acl : it->acl) {  // (before the bits: chmod then sets the ACL's mask from them)
        if (!fd.ok()) break;
        if (Status a = set_xattr(fd->get(), acl); !a.ok()) xattr_failed(it->shown, a.error());
      }
      Status st = fd.ok() ? apply_fd_meta(fd->get(), it->meta, opt_.preserve,
                                          opt_.preserve.perms ? static_cast<int>(preserved_bits(it->meta.mode, true, running_as_root() && opt_.preserve.trusted_sender)) : -1, it->shown)
                          : Status(fd.error());
      if (!st.ok()) {
        ++stats_.files_failed;
        stats_.note_error(fmt::format("{}: {}", it->shown, st.error().message()));
      }
    }
    dirs_.clear();
    dir_acls_held_ = 0;
  }

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

  /// The entry that stood at the destination, opened to read or set its
  /// xattrs: a regular file (never through a symlink: O_NOFOLLOW) or a
  /// directory beneath the destination. Invalid when there is none.
  Fd open_existing(const File& f) const {
    if (f.is_dir) {
      if (!dest_.dir.valid()) return {};
      auto d = open_beneath(dest_.dir.get(), f.rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      return d.ok() ? std::move(d.value()) : Fd{};
    }
    if (f.dir_fd < 0 || f.type != S_IFREG) return {};
    Fd fd(::openat(f.dir_fd, f.leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st;
    if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
    return fd;
  }

  /// -i: which of the 'a' and 'x' letters the entry's xattrs change in what
  /// stands at the destination (a new entry is "+++++++++" anyway).
  void xattrs_before(File& f) {
    if ((!opt_.preserve.xattrs && !opt_.preserve.acls) || !f.old.exists || f.old.type != f.type) return;
    if (f.type != S_IFREG && f.type != S_IFDIR) return;
    // A file the rules keep is updated only when the quick check kept it
    // (rsync: --ignore-existing and -u leave a kept file wholly alone).
    const bool kept = opt_.rules.dry_run ? !f.dry_write : f.skip;  // (a dry run "skips" every file)
    if (kept && f.type == S_IFREG &&
        (opt_.rules.ignore_existing || f.old.size != f.size || f.old.mtime_ns != f.mtime_ns))
      return;
    Fd fd = open_existing(f);
    if (!fd.valid()) return;
    auto old = read_xattrs(fd.get(), xscope_);
    f.xattr_bits = old.ok() ? xattr_changes(*old, f.xattrs) : 0;
  }

  /// A file the update rules keep (quick check): its xattrs are brought to
  /// the source's all the same, as rsync -X does. A failure fails the file.
  void update_kept_xattrs(File& f) {
    if (f.xattr_bits == 0) return;
    Fd fd = open_existing(f);
    if (!fd.valid()) return;
    if (Status st = set_xattrs(f, fd.get()); !st.ok()) fail_file(f, st.error().message());
  }

  /// Sets f's xattrs on fd and removes the others this copy carries, so the
  /// entry ends with exactly the source's. A file system without xattrs (of
  /// a namespace) is told once per session and passed over, as rsync does.
  Status set_xattrs(File& f, int fd) {
    Status st = apply_xattrs(fd, f.xattrs, xscope_);
    if (!st.ok() && xattrs_unsupported(st.error().code)) {
      xattr_failed(f.shown, st.error());
      return {};
    }
    if (!st.ok()) return make_error(st.error().code, fmt::format("{} on '{}'", st.error().context, f.shown));
    return {};
  }

  /// A directory's xattrs, set when it is made (its contents inherit a
  /// default ACL); the access ACL is left in `acl` to be set with its bits.
  Status dir_xattrs(File& f, std::vector<Xattr>& acl) {
    if (opt_.rules.dry_run) return {};
    std::vector<Xattr> now;
    for (Xattr& x : f.xattrs) (x.name == "system.posix_acl_access" ? acl : now).push_back(std::move(x));
    Fd fd = open_existing(f);
    if (!fd.valid()) return make_error(EIO, fmt::format("'{}': directory gone before its xattrs were set", f.shown));
    if (!acl.empty() && dir_acls_held_ + acl[0].value.size() > kMaxDirAclsHeld) {
      now.push_back(std::move(acl[0]));
      acl.clear();
    }
    if (!acl.empty()) dir_acls_held_ += acl[0].value.size();
    std::vector<Xattr> keep = now;
    keep.insert(keep.end(), acl.begin(), acl.end());  // (not removed here: set at fix_dirs)
    f.xattrs = std::move(now);
    Status st;
    for (const Xattr& x : f.xattrs)
      if (st.ok()) st = set_xattr(fd.get(), x);
    if (st.ok()) st = remove_other_xattrs(fd.get(), keep, xscope_);
    if (!st.ok() && xattrs_unsupported(st.error().code)) {
      xattr_failed(f.shown, st.error());
      st = {};
    }
    if (!st.ok()) return make_error(st.error().code, fmt::format("{} on '{}'", st.error().context, f.shown));
    return {};
  }

  /// An xattr this file system does not keep: said once per session (-v
  /// shows each), the copy goes on without it.
  void xattr_failed(const std::string& shown, const Error& e) {
    if (!xattr_noted_) log_warning("'{}': {}: xattrs this file system does not keep are not copied", shown, e.message());
    else log_info("'{}': {}", shown, e.message());
    xattr_noted_ = true;
  }

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
}  // namespace

Result<TransferStats> run_sink(Channel& ch, Destination& dest, const SessionOptions& opt) {
  return run_role<Sink>(ch, dest, opt);
}
}  // namespace rcp
